"""Whether a PostgreSQL install is (still) on a host: the programs a run starts from it.

A host rebuilt, or a build removed by hand, leaves the inventory naming a bin directory that is
not there. A run checks its programs before anything of it touches the host's storage (a mkfs
for nothing is a device wiped for nothing), and the probe marks installs that are gone.
Programs are looked at as benchlab's unprivileged user, who is the one that runs them.
"""

from collections.abc import Iterable, Sequence

from runs.lab.errors import LabError
from runs.lab.host.run_user import run_as_run_user
from runs.lab.transport.interface import Transport

# What a run starts from the server's install (postgres.py, pgbench.py, stages.py), and from a
# client host's.
SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres", "psql", "createdb", "pgbench")
CLIENT_PROGRAMS = ("pgbench",)

# $1 the bin directory, then program names: each one it lacks (or that the user cannot run).
_MISSING = 'd=$1; shift; for p; do [ -f "$d/$p" ] && [ -x "$d/$p" ] || echo "$p"; done'
# Each argument a bin directory holding none of the server's programs.
_GONE = f'for d; do n=0; for p in {" ".join(SERVER_PROGRAMS)}; do [ -e "$d/$p" ] && n=1; done; [ $n = 1 ] || echo "$d"; done'  # noqa: E501


def missing_programs(transport: Transport, bin_dir: str, programs: Sequence[str]) -> list[str]:
    """Those of `programs` that `bin_dir` on the host lacks, or that the run user cannot run."""
    found = run_as_run_user(transport, ["sh", "-c", _MISSING, "sh", bin_dir, *programs], check=False)
    if found.exit_status != 0:
        raise LabError(f"cannot look into {bin_dir} on {transport.label}: {found.stderr.strip()[:200]}")
    return found.stdout.split()


def installs_gone(transport: Transport, bin_dirs: Iterable[str]) -> set[str]:
    """The bin directories that hold none of PostgreSQL's programs on the host any more (gone,
    or emptied): what the probe marks missing. One partly broken is left to the run's check,
    which names what it lacks."""
    dirs = list(bin_dirs)
    if not dirs:
        return set()
    found = run_as_run_user(transport, ["sh", "-c", _GONE, "sh", *dirs], check=False)
    if found.exit_status != 0:
        raise LabError(f"cannot look for PostgreSQL installs on {transport.label}: {found.stderr.strip()[:200]}")
    return set(found.stdout.splitlines()) & set(dirs)
