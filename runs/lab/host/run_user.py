"""The unprivileged OS user that runs throw-away clusters and pgbench on every host.

Not `postgres`: on a host with a real PostgreSQL (benchlab's own database on "this machine")
the `postgres` OS user may connect to it as a superuser. A run's cluster, its pgbench and
the user's custom script run as RUN_USER instead, which benchlab creates on each host with no
login, no home, no group but its own, no cron or at jobs, and a clean environment (a worker's
environment holds benchlab's secrets).

Defence in depth: root never acts on a path or a PID that this user could have planted.
Files the user writes (pgbench's output, the cluster's files) are read and written through
the user itself (`read_as_run_user`, `append_as_run_user`, `write_as_run_user`), and
processes whose PID came from such a file are signalled as the user (`signal_as_run_user`),
so a symlink or a forged PID cannot make root read, write or kill anything else. Whatever
the user left running is stopped before and after each run (`stop_run_user_processes`).
"""

import shlex
from collections.abc import Sequence
from typing import Any

from runs.lab.errors import LabError
from runs.lab.transport.interface import CLEAN_ENVIRONMENT, CommandResult, Transport, as_user

# A name PostgreSQL's peer authentication maps to no existing role (unlike "benchlab" or "postgres").
RUN_USER = "benchlab-run"
# What the user may read of the host, in one round trip: create it if missing (retrying while
# another run on a host sharing /etc/passwd holds the lock), keep it out of cron and at, and
# report its uid, how many accounts share that uid, its groups and the members of its group.
_ENSURE = r"""
user=$1
for attempt in 1 2 3 4 5; do
  id -u "$user" >/dev/null 2>&1 && break
  if getent group "$user" >/dev/null; then group="-g $user"; else group=--user-group; fi
  useradd --system $group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
    --comment "benchlab runs throw-away PostgreSQL clusters and pgbench as this user" "$user" && break
  sleep 0.$attempt
done
id -u "$user" >/dev/null || exit 1
for deny in /etc/cron.deny /etc/at.deny; do
  grep -qx "$user" "$deny" 2>/dev/null || echo "$user" >> "$deny"
done
uid=$(id -u "$user")
echo "uid $uid"
echo "sharing $(getent passwd | awk -F: -v uid="$uid" '$3 == uid' | wc -l)"
echo "groups $(id -Gn "$user")"
echo "members $(getent group "$user" | cut -d: -f4)"
"""
# The user's live processes in this host's PID namespace (a virtual lab host's own, or the
# machine's): found by owner, stopped by PID, as the user. Zombies are dead already (their
# parent may be an init that does not reap them).
_LIVE = '-r D,R,S,T,t,W -u "$1" --ns $$ --nslist pid'
_STOP_ALL = (
    f"pids=$(pgrep {_LIVE}); "
    # As every command run as the user: with a clean environment, not the caller's (transport.as_user).
    f'[ -z "$pids" ] || runuser -u "$1" -- env -i {shlex.join(CLEAN_ENVIRONMENT)} kill -KILL $pids; '
    f"for _ in $(seq 50); do pgrep {_LIVE} >/dev/null || exit 0; sleep 0.1; done; exit 1"
)


def ensure_run_user(transport: Transport, user: str = RUN_USER) -> None:
    """Create RUN_USER unless it exists; refuse to use one that is not unprivileged. (Another
    `user` only for tests that give an account rights to see it refused: RUN_USER is shared by
    every run on hosts that share this machine's /etc.)"""
    found = transport.run(["sh", "-c", _ENSURE, "sh", user], check=False)
    if found.exit_status != 0:
        raise LabError(f"cannot create the OS user {user} on {transport.label}: {found.stderr.strip()}")
    facts = dict(line.partition(" ")[::2] for line in found.stdout.splitlines())
    problems = []
    if facts.get("uid") in (None, "0"):
        problems.append(f"uid {facts.get('uid')}")
    if facts.get("sharing") != "1":
        problems.append(f"its uid is shared by {facts.get('sharing')} accounts")
    if facts.get("groups") != user:
        problems.append(f"groups {facts.get('groups')}")
    if facts.get("members"):
        problems.append(f"its group also holds {facts['members']}")
    if problems:
        raise LabError(
            f"the OS user {user} on {transport.label} is not unprivileged ({'; '.join(problems)}): "
            "benchlab runs benchmarks only as a user with no other rights"
        )


def stop_run_user_processes(transport: Transport, user: str = RUN_USER) -> None:
    """Stop every process of RUN_USER (or, in tests, of `user`) on the host (its PID namespace):
    one run's leftovers must not outlive it (hosts are claimed one run at a time)."""
    if transport.run(["sh", "-c", _STOP_ALL, "sh", user], check=False).exit_status != 0:
        raise LabError(f"processes of {user} on {transport.label} survived SIGKILL")


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


# Written beside the file and renamed over it: a symlink at the path is replaced, never
# followed, and a reader never sees half a file. With the user's rights only, like the rest.
_REPLACE = (
    'tmp=$(mktemp -- "$1.XXXXXX") || exit 1; '
    'if cat > "$tmp" && mv -fT -- "$tmp" "$1"; then exit 0; fi; '
    'rm -f -- "$tmp"; exit 1'
)


def write_as_run_user(transport: Transport, path: str, text: str) -> None:
    """Replace the user's file `path` with `text` (mode 0600), as the user."""
    run_as_run_user(transport, ["sh", "-c", _REPLACE, "sh", path], stdin=text.encode())


def process_alive(transport: Transport, target: int | str, as_root: bool = False) -> bool:
    """Whether the process `target` (a PID, or "-<PID>" for its process group) still runs: the
    one `kill -0` of the lab layer. As the run user, who reaches only its own processes (a PID
    read from a file the user writes must not tell about anybody else's); as root only for
    root's own (the collectors). A zombie counts as running: its parent has not waited for it."""
    argv = ["kill", "-0", "--", str(target)]
    if as_root:
        return transport.run(argv, check=False, cwd="/").exit_status == 0
    return run_as_run_user(transport, argv, check=False).exit_status == 0


def signal_as_run_user(transport: Transport, target: str, signal_name: str) -> bool:
    """`kill -<signal> <target>` as the user: it reaches only the user's own processes.

    target is a PID or "-<PID>" for a process group. True if the signal was delivered."""
    return run_as_run_user(transport, ["kill", f"-{signal_name}", "--", target], check=False).exit_status == 0
