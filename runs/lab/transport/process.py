"""Commands that run detached on a host: pgbench, fio, make, iostat.

A measurement must survive a lost SSH connection or a dead worker, so a long command runs in its
own session on the host with its output going to files in a run directory; benchlab then follows
those files by byte offset (lab.pgbench.follow), reads its exit status from a file, and stops it
by its PID (as the user it runs as, never as root).
"""

import re
import shlex
from dataclasses import dataclass

from runs.lab.errors import InvalidOption, LabError
from runs.lab.host.run_user import process_alive
from runs.lab.options import BUILTIN_SCRIPTS as BUILTIN_SCRIPTS  # re-exported: checked without a host
from runs.lab.options import QUERY_MODES as QUERY_MODES
from runs.lab.options import InitOptions as InitOptions
from runs.lab.options import RunOptions as RunOptions
from runs.lab.transport.interface import Transport, as_user
from runs.lab.transport.waiting import wait_until


@dataclass(frozen=True)
class Detached:
    """A command running in its own session on a host; `pid` is its session and group leader."""

    run_dir: str
    name: str  # files: <name>.stdout, <name>.stderr, <name>.exit
    pid: int
    # Who runs it. Its files and its PID are then that user's to write, so benchlab reads
    # them and signals it as that user, never as root (run_user.py).
    user: str | None = None

    def path(self, suffix: str) -> str:
        return f"{self.run_dir}/{self.name}.{suffix}"

    def command(self, argv: list[str]) -> list[str]:
        """argv as it must run to read this command's files or signal it."""
        return as_user(self.user, argv) if self.user else argv


def start_detached(
    transport: Transport, argv: list[str], run_dir: str, name: str, user: str | None = None, wait_s: float = 10.0
) -> Detached:
    """Start argv in a new session with output in run_dir/name.{stdout,stderr}; exit status in name.exit.

    The wrapper shell writes its PID before anything else, the epoch just before argv starts
    (name.started: pgbench's logs are in epoch time) and the exit status last (via a rename,
    so a reader never sees half of it).
    """
    if not re.fullmatch(r"[a-z0-9_-]+", name):
        raise InvalidOption(f"bad process name {name!r}")
    prefix = f"{run_dir}/{name}"
    script = (
        # `trap :` keeps the wrapper alive through a cancel so it records pgbench's status;
        # unlike an ignored signal, a trapped one is reset to default for pgbench itself.
        f"exec </dev/null >/dev/null 2>&1; trap : INT TERM; echo $$ > {shlex.quote(prefix)}.pid; "
        f"date +%s.%N > {shlex.quote(prefix)}.started; "
        f"{shlex.join(argv)} > {shlex.quote(prefix)}.stdout 2> {shlex.quote(prefix)}.stderr; "
        f"echo $? > {shlex.quote(prefix)}.exit.tmp && mv {shlex.quote(prefix)}.exit.tmp {shlex.quote(prefix)}.exit"
    )
    starting = Detached(run_dir=run_dir, name=name, pid=0, user=user)
    transport.run(starting.command(["setsid", "-f", "sh", "-c", script]), cwd=run_dir)

    def started() -> Detached | None:
        found = transport.run(starting.command(["cat", f"{prefix}.pid"]), check=False)
        if found.exit_status == 0 and found.stdout.strip().isdigit():
            return Detached(run_dir=run_dir, name=name, pid=int(found.stdout.strip()), user=user)
        return None

    if (process := wait_until(started, wait_s, 0.05)) is None:
        raise LabError(f"{name} did not start on {transport.label} within {wait_s:g} s")
    return process


def is_running(transport: Transport, process: Detached) -> bool:
    return process_alive(transport, process.pid, as_root=process.user is None)


def exit_status(transport: Transport, process: Detached) -> int | None:
    """The exit status once the command has finished; None while it runs."""
    found = transport.run(process.command(["cat", process.path("exit")]), check=False)
    text = found.stdout.strip()
    if found.exit_status != 0 or not text:
        return None
    if not text.lstrip("-").isdigit():
        raise LabError(f"{process.name}'s exit status file on {transport.label} holds {text[:40]!r}")
    return int(text)


def wait_for_exit(transport: Transport, process: Detached, timeout_s: float, poll_s: float = 0.5) -> int:
    if (status := wait_until(lambda: exit_status(transport, process), timeout_s, poll_s)) is None:
        raise LabError(f"{process.name} (PID {process.pid}) still runs after {timeout_s:g} s")
    return status


def cancel(transport: Transport, process: Detached, grace_s: float = 10.0) -> None:
    """SIGINT the whole session (pgbench prints what it has), then SIGKILL if it lingers."""
    group = f"-{process.pid}"

    def gone() -> bool:
        return not process_alive(transport, group, as_root=process.user is None)

    for signal_name, wait in (("INT", grace_s), ("TERM", grace_s), ("KILL", 5.0)):
        if gone():
            return
        transport.run(process.command(["kill", f"-{signal_name}", "--", group]), check=False)
        if wait_until(gone, wait, 0.2):
            return
