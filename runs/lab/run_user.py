"""The unprivileged OS user that runs throw-away clusters and pgbench on every host.

Not `postgres`: on a host with a real PostgreSQL (benchlab's own database on "this machine")
the `postgres` OS user may connect to it as a superuser. A run's cluster, its pgbench and
the user's custom script run as RUN_USER instead, which benchlab creates on each host with no
login, no home and no group but its own.

Defence in depth: root never acts on a path or a PID that this user could have planted.
Files the user writes (pgbench's output, the cluster's files) are read and written through
the user itself (`read_as_run_user`, `append_as_run_user`), and processes whose PID came from
such a file are signalled as the user (`signal_as_run_user`), so a symlink or a forged PID
cannot make root read, write or kill anything else.
"""

from collections.abc import Sequence
from typing import Any

from runs.lab.errors import LabError
from runs.lab.transport import CommandResult, Transport, as_user

# A name PostgreSQL's peer authentication maps to no existing role (unlike "benchlab" or "postgres").
RUN_USER = "benchlab-run"
_USERADD = [
    "useradd",
    "--system",
    "--user-group",
    "--no-create-home",
    "--home-dir",
    "/nonexistent",
    "--shell",
    "/usr/sbin/nologin",
    "--comment",
    "benchlab runs throw-away PostgreSQL clusters and pgbench as this user",
    RUN_USER,
]


def ensure_run_user(transport: Transport) -> None:
    """Create RUN_USER unless it exists; refuse to use one that is not unprivileged."""
    if transport.run(["id", "-u", RUN_USER], check=False).exit_status != 0:
        created = transport.run(_USERADD, check=False)
        # Another run on a host sharing /etc/passwd may have created it meanwhile.
        if created.exit_status != 0 and transport.run(["id", "-u", RUN_USER], check=False).exit_status != 0:
            raise LabError(f"cannot create the OS user {RUN_USER} on {transport.label}: {created.stderr.strip()}")
    uid = transport.run(["id", "-u", RUN_USER]).stdout.strip()
    groups = transport.run(["id", "-Gn", RUN_USER]).stdout.split()
    if uid == "0" or groups != [RUN_USER]:
        raise LabError(
            f"the OS user {RUN_USER} on {transport.label} is not unprivileged (uid {uid}, groups "
            f"{', '.join(groups)}): benchlab runs benchmarks only as a user with no other rights"
        )


def as_run_user(argv: Sequence[str]) -> list[str]:
    return as_user(RUN_USER, argv)


def run_as_run_user(transport: Transport, argv: Sequence[str], **kwargs: Any) -> CommandResult:
    # cwd "/": runuser keeps root's cwd, which the user may not be allowed to enter.
    kwargs.setdefault("cwd", "/")
    return transport.run(as_run_user(argv), **kwargs)


def read_as_run_user(transport: Transport, path: str, check: bool = True) -> str:
    """A file the user may have written, read with the user's rights (never root's)."""
    return run_as_run_user(transport, ["cat", "--", path], check=check).stdout


def append_as_run_user(transport: Transport, path: str, text: str) -> None:
    run_as_run_user(transport, ["sh", "-c", 'cat >> "$1"', "sh", path], stdin=text.encode())


def signal_as_run_user(transport: Transport, target: str, signal_name: str) -> bool:
    """`kill -<signal> <target>` as the user: it reaches only the user's own processes.

    target is a PID or "-<PID>" for a process group. True if the signal was delivered."""
    return run_as_run_user(transport, ["kill", f"-{signal_name}", "--", target], check=False).exit_status == 0
