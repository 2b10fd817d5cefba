"""The shell scripts of the plain-ssh side of the harness benchmark (direct_pgbench.py): set up
the storage and a throw-away cluster as a benchlab run recorded them, measure, and undo it all.
Each is a text for `sh -c` on the lab host; nothing here runs anything.
"""

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runs.lab.postgres.cluster import Cluster
from runs.lab.storage.mounts import MOUNT_ROOT

OS_USER = "postgres"  # what an engineer runs a throw-away cluster as


SUPERUSER, BENCH_ROLE, DATABASE = "postgres", "bench", "bench"  # as benchlab's cluster has them


INITDB_FLAGS = ("-U", SUPERUSER, "--auth-local=trust", "--auth-host=reject", "-E", "UTF8", "--locale=C", "-N")


# Differs by nature: each side's own socket directory.
OWN_SETTINGS = ("unix_socket_directories",)


PGBENCH_FOLLOWS = "== pgbench =="  # on stdout between the setup's output and pgbench's


NON_DEFAULT_SQL = (
    "SELECT json_object_agg(name, setting) FROM pg_settings"
    " WHERE source NOT IN ('default', 'override', 'client', 'session')"
)


@dataclass(frozen=True)
class Recorded:
    """How a benchlab run measured, as its record (Run.environment) says."""

    device_node: str
    mkfs_command: list[str]
    fstype: str
    mount_options_requested: str
    mount_options: str  # as /proc/mounts showed them
    bin_dir: str
    settings: dict[str, str]  # the server's non-default settings
    init_command: list[str]
    command: list[str]

    @classmethod
    def from_environment(cls, environment: dict[str, Any]) -> "Recorded":
        filesystem, postgresql = environment["filesystem"], environment["postgresql"]
        return cls(
            device_node=environment["device"]["node"],
            mkfs_command=shlex.split(filesystem["mkfs_command"]),
            fstype=filesystem["type"],
            mount_options_requested=filesystem["mount_options_requested"],
            mount_options=filesystem["mount_options"],
            bin_dir=postgresql["bin_dir"],
            settings=dict(postgresql["non_default_settings"]),
            init_command=shlex.split(environment["init_command"]),
            command=shlex.split(environment["pgbench"]["command"]),
        )

    @property
    def port(self) -> int:
        return int(self.settings["port"])


@dataclass(frozen=True)
class Place:
    """Where this side's run lives on the host, named by a token of its own."""

    token: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9-]+", self.token):
            raise ValueError(f"bad token {self.token!r}")

    @property
    def mountpoint(self) -> str:
        return f"{MOUNT_ROOT}/direct-{self.token}"

    @property
    def cluster(self) -> Cluster:
        """Laid out on the mount as benchlab lays out its throw-away cluster."""
        return Cluster(bin_dir="", base_dir=f"{self.mountpoint}/postgres", port=0)

    @property
    def data_dir(self) -> str:
        return self.cluster.data_dir

    @property
    def socket_dir(self) -> str:
        return self.cluster.socket_dir

    @property
    def log_dir(self) -> str:
        """pgbench's logs: beside benchlab's run directories, on the same filesystem."""
        return f"/var/lib/benchlab/direct-{self.token}"

    @property
    def pgbench_pid_file(self) -> str:
        return f"{self.log_dir}/pgbench.pid"

    @property
    def loaded_file(self) -> str:
        """When `pgbench -i` ended (epoch seconds, by the host's clock)."""
        return f"{self.log_dir}/loaded"


def _replaced_once(argv: list[str], flag: str, value: str) -> list[str]:
    """argv with the value of `flag` (as "-h VALUE" or "--flag=VALUE") replaced; exactly one."""
    out, found = [], 0
    skip = False
    for position, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word == flag and not flag.startswith("--") and position + 1 < len(argv):
            out += [flag, value]
            skip, found = True, found + 1
        elif flag.startswith("--") and word.startswith(f"{flag}="):
            out.append(f"{flag}={value}")
            found += 1
        else:
            out.append(word)
    if found != 1:
        raise ValueError(f"expected one {flag} in {shlex.join(argv)}, found {found}")
    return out


def retargeted(argv: list[str], place: Place, log_prefix: bool) -> list[str]:
    """A recorded pgbench command line pointed at this side's cluster (its socket directory)
    and, for the measurement, its log directory; every other word as benchlab ran it."""
    if not argv or not argv[0].endswith("/pgbench"):
        raise ValueError(f"not a pgbench command: {shlex.join(argv)}")
    argv = _replaced_once(argv, "-h", place.socket_dir)
    if log_prefix:
        prefix = next(word for word in argv if word.startswith("--log-prefix="))
        argv = _replaced_once(argv, "--log-prefix", f"{place.log_dir}/{Path(prefix.split('=', 1)[1]).name}")
    return argv


def _as_os_user(argv: list[str]) -> str:
    return shlex.join(["runuser", "-u", OS_USER, "--", *argv])


def setup_script(recorded: Recorded, place: Place) -> str:
    """Storage, cluster and data, as the benchlab run had them. Prints the mount's options as
    /proc/mounts shows them and the server's non-default settings (JSON), for the check."""
    if recorded.mkfs_command[-1] != recorded.device_node or not recorded.mkfs_command[0].startswith("mkfs."):
        raise ValueError(f"unexpected mkfs command {shlex.join(recorded.mkfs_command)}")
    q = shlex.quote
    tool = f"{recorded.bin_dir}/"
    socket = ["-h", place.socket_dir, "-p", str(recorded.port), "-U", SUPERUSER]
    options = ["-o", recorded.mount_options_requested] if recorded.mount_options_requested else []
    conf = [f"port = {recorded.port}", f"unix_socket_directories = '{place.socket_dir}'", "listen_addresses = ''"]
    pg_ctl = [f"{tool}pg_ctl", "-D", place.data_dir, "-l", place.cluster.log_file, "-w", "-t", "300"]
    psql = [f"{tool}psql", *socket, "-d", "postgres", "-AtX", "-v", "ON_ERROR_STOP=1", "-c"]
    owned = ["-o", OS_USER, "-g", OS_USER]
    return "\n".join(
        [
            "set -eu",
            "cd /",
            shlex.join(["install", "-d", "-m", "0755", "/mnt/benchlab", place.mountpoint]),
            shlex.join(recorded.mkfs_command),
            shlex.join(["mount", "-t", recorded.fstype, *options, recorded.device_node, place.mountpoint]),
            shlex.join(["install", "-d", "-m", "0700", *owned, place.cluster.base_dir, place.log_dir]),
            _as_os_user(["mkdir", "-m", "0700", place.socket_dir]),
            # sshd hands its own TZ to the session; benchlab's initdb (clean environment) takes the
            # host's zone from /etc/localtime, and TimeZone/log_timezone must be the same.
            _as_os_user(["env", "-u", "TZ", f"{tool}initdb", "-D", place.data_dir, *INITDB_FLAGS]) + " >/dev/null",
            f"printf '%s\\n' {' '.join(q(line) for line in conf)} | "
            + _as_os_user(["tee", "-a", f"{place.data_dir}/postgresql.conf"])
            + " >/dev/null",
            _as_os_user([*pg_ctl, "start"]) + " >/dev/null",
            _as_os_user([*psql, f"CREATE ROLE {BENCH_ROLE} LOGIN"]) + " >/dev/null",
            _as_os_user([f"{tool}createdb", *socket, "-O", BENCH_ROLE, DATABASE]),
            _as_os_user(retargeted(recorded.init_command, place, log_prefix=False)) + " 2>&1",
            f"date +%s.%N | tee {q(place.loaded_file)} | sed 's/^/loaded /'",
            f"awk -v m={q(place.mountpoint)} '$2 == m {{ print \"mount_options \" $4 }}' /proc/mounts",
            "printf 'settings '; " + _as_os_user([*psql, NON_DEFAULT_SQL]),
        ]
    )


PAUSE = r"""set -eu
pause=$(awk -v loaded="$(cat "$1")" -v gap="$2" -v now="$(date +%s.%N)" \
  'BEGIN { p = loaded + gap - now; printf "%.3f", (p > 0 ? p : 0) }')
sleep "$pause"
echo "started $(date +%s.%N)" >&2
"""


def measure_script(recorded: Recorded, place: Place, gap_s: float) -> str:
    """pgbench in the foreground, as the OS user, its PID in a file (for the cleanup); started
    `gap_s` after the load ended, as the benchlab run's pgbench was (its commands in between)."""
    command = retargeted(recorded.command, place, log_prefix=True)
    pause = shlex.join(["sh", "-c", PAUSE, "sh", place.loaded_file, f"{gap_s:.3f}"])
    # The inner shell writes its own PID and becomes pgbench.
    pgbench = _as_os_user(["sh", "-c", 'echo $$ > "$0" && exec "$@"', place.pgbench_pid_file, *command])
    return f"cd / && {pause} && exec {pgbench}"


_CLEANUP = r"""
set -u
mnt=$1 data=$2 logdir=$3 bindir=$4
status=0
cd /
alive() { [ -n "$1" ] && [ -d "/proc/$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }
pid=$(cat "$logdir/pgbench.pid" 2>/dev/null || true)
if alive "$pid" pgbench; then
  kill -INT "$pid"
  for _ in $(seq 50); do alive "$pid" pgbench || break; sleep 0.1; done
  if alive "$pid" pgbench; then kill -KILL "$pid"; fi
fi
pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
if alive "$pid" postgres; then
  for mode in fast immediate; do
    runuser -u postgres -- "$bindir/pg_ctl" -D "$data" -w -t 180 -m "$mode" stop >/dev/null 2>&1 || true
    alive "$pid" postgres || break
  done
  if alive "$pid" postgres; then kill -KILL "$pid"; fi
  for _ in $(seq 300); do alive "$pid" postgres || break; sleep 0.1; done
  if alive "$pid" postgres; then echo "postgres $pid survived SIGKILL"; status=1; fi
fi
for _ in $(seq 20); do
  awk -v m="$mnt" '$2 == m { found = 1 } END { exit !found }' /proc/mounts || break
  umount "$mnt" 2>/dev/null || sleep 0.5
done
if awk -v m="$mnt" '$2 == m { found = 1 } END { exit !found }' /proc/mounts; then
  echo "still mounted: $mnt"; status=1
else
  rmdir "$mnt" 2>/dev/null || [ ! -e "$mnt" ] || { echo "cannot remove $mnt"; status=1; }
fi
rm -rf -- "$logdir"
exit $status
"""


def cleanup_argv(recorded: Recorded, place: Place) -> list[str]:
    """Undo whatever of setup_script and measure_script ran (any part of them, or none)."""
    return ["sh", "-c", _CLEANUP, "sh", place.mountpoint, place.data_dir, place.log_dir, recorded.bin_dir]


def run_script(recorded: Recorded, place: Place, gap_s: float) -> str:
    """The whole run in one ssh session, as an engineer's script would do it: setup_script, a
    marker line, then measure_script (pgbench's summary follows the marker on stdout)."""
    return "\n".join([setup_script(recorded, place), f"echo {shlex.quote(PGBENCH_FOLLOWS)}",
                      measure_script(recorded, place, gap_s)])  # fmt: skip
