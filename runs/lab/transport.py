"""How benchlab runs commands on a lab host: one small interface, two implementations.

`SSHTransport` talks to a remote host with paramiko, key authentication only, against host
keys pinned in the inventory. `LocalTransport` runs commands on the machine the worker is on.
Commands are always argument lists; for the remote shell they are quoted with shlex, so
no user text reaches a shell unquoted.
"""

import base64
import io
import os
import selectors
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import paramiko

from runs.lab.errors import (
    CommandFailed,
    CommandTimeout,
    ConnectFailed,
    ConnectionLost,
    HostKeyRefused,
    OutputTooLarge,
)

# Lines are decoded with "surrogateescape": line.encode(errors="surrogateescape") gives back the
# exact bytes (the follower counts them), and clean_text() makes a line safe to store.
LineCallback = Callable[[str], None]


def clean_text(line: str) -> str:
    """A callback's line with undecodable bytes shown as U+FFFD."""
    return line.encode(errors="surrogateescape").decode(errors="replace")


DEFAULT_TIMEOUT = 120.0
_READ_CHUNK = 65536
# How long a command's loop sleeps when nothing happens: output, EOF, the channel's close and a
# lost connection all wake it at once, so this only bounds how late a time limit is noticed. A
# short one costs: at 10 ms a long command (the follower's `tail` beside pgbench) kept the
# worker at 0.7 % of a core, taken from pgbench on a CPU-bound host.
_IDLE_WAIT_S = 0.25
# A command's output is held in memory: a file that never ends (a symlink to /dev/zero among
# the run user's files) must not take the worker's memory with it. A week-long run's pgbench
# progress log is about 50 MB.
MAX_OUTPUT_BYTES = 512 * 2**20
MAX_LINE_BYTES = 16 * 2**20


@dataclass(frozen=True)
class CommandResult:
    command: str
    exit_status: int
    stdout: str
    stderr: str


class Transport(Protocol):
    """A connection to one lab host."""

    label: str

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        check: bool = True,
        cwd: str | None = None,
        stdin: bytes | None = None,
        on_stdout: LineCallback | None = None,
        on_stderr: LineCallback | None = None,
    ) -> CommandResult:
        """Run argv to completion; stream complete lines to the callbacks as they arrive.

        With check=True a non-zero exit raises CommandFailed (with the output's tail).
        """
        ...

    def upload(self, local: Path, remote: str) -> None: ...

    def download(self, remote: str, local: Path) -> None: ...

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None: ...

    def read_file(self, remote: str) -> bytes: ...

    def close(self) -> None: ...


def command_line(argv: Sequence[str], cwd: str | None = None) -> str:
    """The shell command for argv, every word quoted; with cwd, run there."""
    if not argv:
        raise ValueError("empty command")
    line = shlex.join(argv)
    return f"cd {shlex.quote(cwd)} && exec {line}" if cwd else line


# The whole environment of a command run as another user: runuser would pass on the caller's,
# and a worker's environment holds benchlab's secrets (DATABASE_URL, CREDENTIALS_KEY, ...).
CLEAN_ENVIRONMENT = ("PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/nonexistent", "LC_ALL=C.UTF-8")


def as_user(user: str, argv: Sequence[str]) -> list[str]:
    """argv run as another OS user (e.g. initdb, which refuses root), with a clean environment."""
    return ["runuser", "-u", user, "--", "env", "-i", *CLEAN_ENVIRONMENT, *argv]


class _LineSplitter:
    """Turns chunks of bytes into complete text lines for a callback and keeps all the text."""

    def __init__(self, callback: LineCallback | None) -> None:
        self.callback = callback
        self.pending = b""
        self.collected = io.BytesIO()

    def feed(self, chunk: bytes) -> None:
        if self.collected.tell() + len(chunk) > MAX_OUTPUT_BYTES:
            raise OutputTooLarge(f"more than {MAX_OUTPUT_BYTES // 2**20} MiB of output")
        self.collected.write(chunk)
        if self.callback is None:
            return
        self.pending += chunk
        if b"\n" not in chunk and len(self.pending) > MAX_LINE_BYTES:
            raise OutputTooLarge(f"a line of more than {MAX_LINE_BYTES // 2**20} MiB")
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            self.callback(line.decode(errors="surrogateescape"))

    def finish(self) -> str:
        if self.callback is not None and self.pending:
            self.callback(self.pending.decode(errors="surrogateescape"))
            self.pending = b""
        return self.collected.getvalue().decode(errors="replace")


def _finish(
    label: str, command: str, status: int, out: _LineSplitter, err: _LineSplitter, check: bool
) -> CommandResult:
    result = CommandResult(command=command, exit_status=status, stdout=out.finish(), stderr=err.finish())
    if check and status != 0:
        raise CommandFailed(command, status, result.stdout, result.stderr, label)
    return result


@dataclass(frozen=True)
class SSHTarget:
    """Everything needed to reach a host over SSH; built from the inventory by the caller."""

    address: str
    port: int = 22
    user: str = "root"
    host_keys: Sequence[str] = ()  # pinned "<type> <base64>" lines
    private_key_path: str | None = None
    private_key_text: str | None = field(default=None, repr=False)
    connect_timeout: float = 10.0
    keepalive_interval: int = 5
    # Unanswered for this long, the connection is dead: a blocked command learns it then, and
    # the run reconnects (reconnect.py) instead of waiting out TCP's retransmissions.
    dead_after_s: float = 20.0

    @property
    def known_hosts_name(self) -> str:
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"


class _PinnedKeysOnly(paramiko.MissingHostKeyPolicy):
    """Refuse any key that is not pinned, saying which key was offered (never add it)."""

    def __init__(self, pinned_fingerprints: Sequence[str]) -> None:
        self.pinned = list(pinned_fingerprints)

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise HostKeyRefused(hostname, f"{key.get_name()} {key.fingerprint}", self.pinned)


def _load_pkey(target: SSHTarget) -> paramiko.PKey:
    if target.private_key_text:
        for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
            try:
                return key_class.from_private_key(io.StringIO(target.private_key_text))
            except paramiko.SSHException:
                continue
        raise ConnectFailed("the stored private key cannot be read")
    if target.private_key_path:
        try:
            return paramiko.PKey.from_path(target.private_key_path)
        except (OSError, paramiko.SSHException) as exc:
            raise ConnectFailed(f"cannot read private key {target.private_key_path}: {exc}") from exc
    raise ConnectFailed("no private key configured for this host")


class SSHTransport:
    def __init__(self, target: SSHTarget) -> None:
        self.target = target
        self.label = f"{target.user}@{target.known_hosts_name}"
        self._client = self._connect()

    def _connect(self) -> paramiko.SSHClient:
        target = self.target
        client = paramiko.SSHClient()
        pinned = []
        for line in target.host_keys:
            key_type, b64 = line.split()[:2]
            key = paramiko.PKey.from_type_string(key_type, base64.b64decode(b64))
            client.get_host_keys().add(target.known_hosts_name, key_type, key)
            pinned.append(f"{key_type} {key.fingerprint}")
        client.set_missing_host_key_policy(_PinnedKeysOnly(pinned))
        try:
            client.connect(
                target.address,
                port=target.port,
                username=target.user,
                pkey=_load_pkey(target),
                timeout=target.connect_timeout,
                banner_timeout=target.connect_timeout,
                auth_timeout=target.connect_timeout,
                allow_agent=False,
                look_for_keys=False,
            )
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise HostKeyRefused(self.label, f"{exc.key.get_name()} {exc.key.fingerprint}", pinned) from exc
        except HostKeyRefused:
            client.close()
            raise
        except (paramiko.SSHException, OSError) as exc:
            client.close()
            raise ConnectFailed(f"cannot connect to {self.label}: {exc}") from exc
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(target.keepalive_interval)
        sock = transport.sock
        # Without it, every channel open waits out a delayed ACK (~40 ms).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # type: ignore[union-attr]
        # paramiko's keep-alive expects no answer; this makes a dead peer fail the connection
        # after dead_after_s instead of after TCP's own retransmission timeout (15 min or more).
        user_timeout_ms = int(target.dead_after_s * 1000)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, user_timeout_ms)  # type: ignore[union-attr]
        return client

    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise ConnectionLost(f"the SSH connection to {self.label} is closed")
        return transport

    @property
    def is_connected(self) -> bool:
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        check: bool = True,
        cwd: str | None = None,
        stdin: bytes | None = None,
        on_stdout: LineCallback | None = None,
        on_stderr: LineCallback | None = None,
    ) -> CommandResult:
        command = command_line(argv, cwd)
        # Closing a channel does not stop the remote command, so the host enforces the time
        # limit itself (coreutils timeout, whose exit status 124 means it fired); our own
        # deadline is a little later, for a host that stops answering altogether.
        remote = command if timeout is None else command_line(["timeout", "-k", "5", f"{timeout:g}s", *argv], cwd)
        try:
            channel = self._transport().open_session(timeout=self.target.connect_timeout)
            channel.exec_command(remote)
            if stdin:
                channel.sendall(stdin)
            channel.shutdown_write()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionLost(f"lost the SSH connection to {self.label}: {exc}") from exc
        out, err = _LineSplitter(on_stdout), _LineSplitter(on_stderr)
        deadline = None if timeout is None else time.monotonic() + timeout + 15
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(channel, selectors.EVENT_READ)
                while not (channel.exit_status_ready() and channel.eof_received) and not channel.closed:
                    if deadline is not None and time.monotonic() > deadline:
                        raise CommandTimeout(command, timeout or 0, self.label)
                    if channel.eof_received:
                        # Nothing more to read (the selector would return at once from now on):
                        # only the exit status is missing, and it does not wake the selector.
                        channel.status_event.wait(_IDLE_WAIT_S)
                    else:
                        selector.select(timeout=_IDLE_WAIT_S)
                    if not self._drain(channel, out, err) and not self.is_connected:
                        raise ConnectionLost(f"lost the SSH connection to {self.label} while running `{command}`")
                self._drain(channel, out, err)  # what arrived together with the exit status
            status = channel.recv_exit_status()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise ConnectionLost(f"lost the SSH connection to {self.label}: {exc}") from exc
        finally:
            channel.close()
        if status == -1:  # the channel closed without an exit status: the session was killed
            raise ConnectionLost(f"the SSH session on {self.label} ended without an exit status for `{command}`")
        if timeout is not None and status == 124:
            raise CommandTimeout(command, timeout, self.label)
        return _finish(self.label, command, status, out, err, check)

    @staticmethod
    def _drain(channel: paramiko.Channel, out: _LineSplitter, err: _LineSplitter) -> bool:
        drained = False
        while channel.recv_ready():
            out.feed(channel.recv(_READ_CHUNK))
            drained = True
        while channel.recv_stderr_ready():
            err.feed(channel.recv_stderr(_READ_CHUNK))
            drained = True
        return drained

    def _sftp(self) -> paramiko.SFTPClient:
        try:
            return self._client.open_sftp()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionLost(f"cannot open SFTP to {self.label}: {exc}") from exc

    def upload(self, local: Path, remote: str) -> None:
        with self._sftp() as sftp:
            sftp.put(str(local), remote)

    def download(self, remote: str, local: Path) -> None:
        with self._sftp() as sftp:
            sftp.get(remote, str(local))

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        with self._sftp() as sftp:
            with sftp.open(remote, "wb") as handle:
                handle.write(content)
            sftp.chmod(remote, mode)

    def read_file(self, remote: str) -> bytes:
        with self._sftp() as sftp, sftp.open(remote, "rb") as handle:
            return handle.read()

    def close(self) -> None:
        self._client.close()


def fetch_host_key(address: str, port: int = 22, timeout: float = 10.0) -> tuple[str, str]:
    """Ask a host for its key without authenticating: ("<type> <base64>", "SHA256:…").

    For an admin to compare the fingerprint with the host's own before pinning it.
    """
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            transport = paramiko.Transport(sock)
            try:
                transport.start_client(timeout=timeout)
                key = transport.get_remote_server_key()
            finally:
                transport.close()
    except (paramiko.SSHException, OSError) as exc:
        raise ConnectFailed(f"cannot fetch the host key of {address}:{port}: {exc}") from exc
    return f"{key.get_name()} {key.get_base64()}", key.fingerprint


class LocalTransport:
    """Commands on the machine the worker runs on, through subprocess (no shell)."""

    def __init__(self, label: str = "this machine") -> None:
        self.label = label

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        check: bool = True,
        cwd: str | None = None,
        stdin: bytes | None = None,
        on_stdout: LineCallback | None = None,
        on_stderr: LineCallback | None = None,
    ) -> CommandResult:
        command = command_line(argv, cwd)
        out, err = _LineSplitter(on_stdout), _LineSplitter(on_stderr)
        try:
            # Its own session, so a timeout can stop the command and everything it started.
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:  # a missing program: what a shell would say, status 127
            err.feed(f"{argv[0]}: {exc.strerror}\n".encode())
            return _finish(self.label, command, 127, out, err, check)
        deadline = None if timeout is None else time.monotonic() + timeout
        feeder = self._feed_stdin(process, stdin) if stdin is not None else None
        try:
            try:
                pumped = self._pump(process, out, err, deadline)
            except OutputTooLarge:
                self._kill(process)
                raise
            if not pumped:
                self._kill(process)
                raise CommandTimeout(command, timeout or 0, self.label)
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
            try:
                status = process.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                self._kill(process)
                raise CommandTimeout(command, timeout or 0, self.label) from None
        finally:
            if feeder is not None:
                feeder.join(timeout=5)
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        return _finish(self.label, command, status, out, err, check)

    @staticmethod
    def _feed_stdin(process: subprocess.Popen[bytes], data: bytes) -> threading.Thread:
        """Write stdin from a thread: a command may read it while we read its output, or not at all."""

        def feed() -> None:
            assert process.stdin is not None
            try:
                process.stdin.write(data)
                process.stdin.close()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the command stopped reading (or ended); what it read is what it gets

        thread = threading.Thread(target=feed, daemon=True)
        thread.start()
        return thread

    def _pump(
        self,
        process: subprocess.Popen[bytes],
        out: _LineSplitter,
        err: _LineSplitter,
        deadline: float | None,
    ) -> bool:
        """Read both outputs until they close; False if the deadline passed first."""
        assert process.stdout is not None and process.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ, out)
            selector.register(process.stderr, selectors.EVENT_READ, err)
            while selector.get_map():
                if deadline is not None and time.monotonic() > deadline:
                    return False
                for key, _ in selector.select(timeout=0.05):
                    chunk = os.read(key.fd, _READ_CHUNK)
                    if chunk:
                        key.data.feed(chunk)
                    else:
                        selector.unregister(key.fileobj)
        return True

    @staticmethod
    def _kill(process: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def upload(self, local: Path, remote: str) -> None:
        Path(remote).write_bytes(local.read_bytes())

    def download(self, remote: str, local: Path) -> None:
        local.write_bytes(Path(remote).read_bytes())

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        path = Path(remote)
        path.write_bytes(content)
        path.chmod(mode)

    def read_file(self, remote: str) -> bytes:
        return Path(remote).read_bytes()

    def close(self) -> None:
        pass
