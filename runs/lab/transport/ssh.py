"""The Transport to a remote lab host: paramiko, key authentication only, against host keys
pinned in the inventory. A lost connection raises ConnectionLost; reconnect.py retries.
"""

import base64
import io
import selectors
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import paramiko

from runs.lab.errors import CommandTimeout, ConnectFailed, ConnectionLost, HostKeyRefused, HostNotAnswering
from runs.lab.transport.interface import (
    IDLE_WAIT_S,
    READ_CHUNK,
    Command,
    CommandResult,
    LineSplitter,
    Transport,
    command_line,
    finish,
)


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


class SSHTransport(Transport):
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
        except paramiko.AuthenticationException as exc:
            client.close()
            raise ConnectFailed(f"cannot connect to {self.label}: {exc}") from exc
        except (paramiko.SSHException, OSError) as exc:
            client.close()
            raise HostNotAnswering(f"cannot connect to {self.label}: {exc}") from exc
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

    def execute(self, command: Command) -> CommandResult:
        argv, timeout, line = command.argv, command.timeout, command.line
        # Closing a channel does not stop the remote command, so the host enforces the time
        # limit itself (coreutils timeout, whose exit status 124 means it fired); our own
        # deadline is a little later, for a host that stops answering altogether.
        remote = line if timeout is None else command_line(["timeout", "-k", "5", f"{timeout:g}s", *argv], command.cwd)
        try:
            channel = self._transport().open_session(timeout=self.target.connect_timeout)
            channel.exec_command(remote)
            if command.stdin:
                channel.sendall(command.stdin)
            channel.shutdown_write()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionLost(f"lost the SSH connection to {self.label}: {exc}") from exc
        out, err = LineSplitter(command.on_stdout), LineSplitter(command.on_stderr)
        deadline = None if timeout is None else time.monotonic() + timeout + 15
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(channel, selectors.EVENT_READ)
                while not (channel.exit_status_ready() and channel.eof_received) and not channel.closed:
                    if deadline is not None and time.monotonic() > deadline:
                        raise CommandTimeout(line, timeout or 0, self.label)
                    if channel.eof_received:
                        # Nothing more to read (the selector would return at once from now on):
                        # only the exit status is missing, and it does not wake the selector.
                        channel.status_event.wait(IDLE_WAIT_S)
                    else:
                        selector.select(timeout=IDLE_WAIT_S)
                    if not self._drain(channel, out, err) and not self.is_connected:
                        raise ConnectionLost(f"lost the SSH connection to {self.label} while running `{line}`")
                self._drain(channel, out, err)  # what arrived together with the exit status
            status = channel.recv_exit_status()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise ConnectionLost(f"lost the SSH connection to {self.label}: {exc}") from exc
        finally:
            channel.close()
        if status == -1:  # the channel closed without an exit status: the session was killed
            raise ConnectionLost(f"the SSH session on {self.label} ended without an exit status for `{line}`")
        if timeout is not None and status == 124:
            raise CommandTimeout(line, timeout, self.label)
        return finish(self.label, line, status, out, err, command.check)

    @staticmethod
    def _drain(channel: paramiko.Channel, out: LineSplitter, err: LineSplitter) -> bool:
        drained = False
        while channel.recv_ready():
            out.feed(channel.recv(READ_CHUNK))
            drained = True
        while channel.recv_stderr_ready():
            err.feed(channel.recv_stderr(READ_CHUNK))
            drained = True
        return drained

    def _sftp(self) -> paramiko.SFTPClient:
        try:
            return self._client.open_sftp()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionLost(f"cannot open SFTP to {self.label}: {exc}") from exc

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        with self._sftp() as sftp:
            with sftp.open(remote, "wb") as handle:
                handle.write(content)
            sftp.chmod(remote, mode)

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
