"""How benchlab runs commands on a lab host: one small interface, two implementations.

`SSHTransport` (ssh.py) talks to a remote host with paramiko, key authentication only, against host
keys pinned in the inventory. `LocalTransport` (local.py) runs commands on the machine the worker is on, and
`ReconnectingTransport` (reconnect.py) wraps either to survive a lost connection.
Commands are always argument lists; for the remote shell they are quoted with shlex, so
no user text reaches a shell unquoted.
"""

import io
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runs.lab.errors import (
    CommandFailed,
    OutputTooLarge,
)

# Lines are decoded with "surrogateescape": line.encode(errors="surrogateescape") gives back the
# exact bytes (the follower counts them), and clean_text() makes a line safe to store.
LineCallback = Callable[[str], None]


def clean_text(line: str) -> str:
    """A callback's line with undecodable bytes shown as U+FFFD."""
    return line.encode(errors="surrogateescape").decode(errors="replace")


DEFAULT_TIMEOUT = 120.0
READ_CHUNK = 65536
# How long a command's loop sleeps when nothing happens: output, EOF, the channel's close and a
# lost connection all wake it at once, so this only bounds how late a time limit is noticed. A
# short one costs: at 10 ms a long command (the follower's `tail` beside pgbench) kept the
# worker at 0.7 % of a core, taken from pgbench on a CPU-bound host.
IDLE_WAIT_S = 0.25
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


@dataclass(frozen=True)
class Command:
    """One command as `Transport.run` was asked to run it."""

    argv: tuple[str, ...]
    timeout: float | None = DEFAULT_TIMEOUT
    check: bool = True
    cwd: str | None = None
    stdin: bytes | None = None
    on_stdout: LineCallback | None = None
    on_stderr: LineCallback | None = None

    @property
    def line(self) -> str:
        """The shell command line, every word quoted (how errors and results name it)."""
        return command_line(self.argv, self.cwd)


class Transport(ABC):
    """A connection to one lab host. Subclasses say how a `Command` is executed."""

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
        return self.execute(Command(tuple(argv), timeout, check, cwd, stdin, on_stdout, on_stderr))

    @abstractmethod
    def execute(self, command: Command) -> CommandResult:
        """What `run` does: run the command to completion on this host."""

    @abstractmethod
    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None: ...

    @abstractmethod
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


class LineSplitter:
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


def finish(label: str, command: str, status: int, out: LineSplitter, err: LineSplitter, check: bool) -> CommandResult:
    result = CommandResult(command=command, exit_status=status, stdout=out.finish(), stderr=err.finish())
    if check and status != 0:
        raise CommandFailed(command, status, result.stdout, result.stderr, label)
    return result
