"""pgbench command lines, and running them detached on the host.

A measurement must survive a lost SSH connection or a dead worker, so pgbench runs in its
own session on the host with its output going to files in a run directory; benchlab then
follows those files by byte offset (see follow.py) and can cancel the run by its PID.
"""

import re
import shlex
from dataclasses import dataclass

from runs.lab.errors import InvalidOption, LabError
from runs.lab.options import BUILTIN_SCRIPTS as BUILTIN_SCRIPTS  # re-exported: checked without a host
from runs.lab.options import QUERY_MODES as QUERY_MODES
from runs.lab.options import InitOptions as InitOptions
from runs.lab.options import RunOptions as RunOptions
from runs.lab.run_user import process_alive
from runs.lab.transport import Transport, as_user
from runs.lab.waiting import wait_until

DATABASE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
LOG_PREFIX = "pgbench_log"  # pgbench adds .<pid>[.<thread>]


@dataclass(frozen=True)
class Connection:
    """Where pgbench connects: a unix-socket directory or an address, a port, a database."""

    host: str
    port: int
    database: str = "bench"
    user: str = "postgres"

    def args(self) -> list[str]:
        if not DATABASE_NAME.fullmatch(self.database):
            raise InvalidOption(f"bad database name {self.database!r}")
        return ["-h", self.host, "-p", str(self.port), "-U", self.user]


def create_database_command(bin_dir: str, connection: Connection, owner: str) -> list[str]:
    if not DATABASE_NAME.fullmatch(owner):
        raise InvalidOption(f"bad role name {owner!r}")
    return [f"{bin_dir}/createdb", *connection.args(), "-O", owner, connection.database]


def init_command(bin_dir: str, connection: Connection, options: InitOptions) -> list[str]:
    options.validate()
    return [f"{bin_dir}/pgbench", "-i", "-s", str(options.scale), *connection.args(), connection.database]


def run_command(
    bin_dir: str, connection: Connection, options: RunOptions, run_dir: str, script_path: str | None = None
) -> list[str]:
    """The measurement's command line: per-second progress, and aggregate or per-transaction logs into run_dir."""
    options.validate()
    argv = [f"{bin_dir}/pgbench", *connection.args()]
    if options.builtin is not None:
        argv += ["-b", options.builtin]
    else:
        if script_path is None:
            raise InvalidOption("a custom script needs its path on the host")
        argv += ["-f", script_path]
    argv += ["-c", str(options.clients), "-j", str(options.threads), "-M", options.query_mode]
    argv += ["-T", str(options.duration_s)]
    if options.rate_tps is not None:
        argv += ["-R", f"{options.rate_tps:g}"]
    argv.append("--progress=1")
    if options.log_sampling_rate is None:
        argv.append("--aggregate-interval=1")
    elif options.log_sampling_rate < 1:
        argv.append(f"--sampling-rate={options.log_sampling_rate:g}")
    argv += ["-l", f"--log-prefix={run_dir}/{LOG_PREFIX}"]
    return [*argv, connection.database]


# ---- detached execution -------------------------------------------------------------------


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
