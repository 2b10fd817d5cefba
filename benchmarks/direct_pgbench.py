"""pgbench as a lab engineer runs it by hand, over plain `ssh`: the same storage, cluster, data
and pgbench flags as a benchlab run recorded (its Run.environment), and nothing else — no
follower, no collectors, no worker.

What the benchlab run recorded is taken as recorded, not derived again: the mkfs command line
(the same device node), the mount options as /proc/mounts showed them, the `pgbench -i` and
pgbench command lines (only their socket directory and log directory are this side's own), and
the non-default settings the server reported, which this side's server must report too. The
cluster is made as benchlab makes one (initdb -U postgres --auth-local=trust -E UTF8
--locale=C -N, the role `bench` owning the database `bench`), as the `postgres` OS user.

Setup and measurement run as one script in one ssh session, pgbench in its foreground: as
long after the end of `pgbench -i` as the benchlab run's pgbench started (benchlab runs a few
commands in between; on the HDD-like disk the load's writeback still goes on then, so the
moment matters).

The scripts are in direct_scripts.py. Everything this side makes on the host is undone by
`cleanup_argv`, on every path: pgbench
stopped by its PID, PostgreSQL stopped by the postmaster's PID, the device unmounted, the
mountpoint and the log directory removed.
"""

import json
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from benchmarks.direct_scripts import (
    OWN_SETTINGS,
    PGBENCH_FOLLOWS,
    Place,
    Recorded,
    cleanup_argv,
    retargeted,
    run_script,
)


@dataclass(frozen=True)
class SshHost:
    """A lab host reached with plain OpenSSH: its address, pinned host key, and the lab's client key."""

    address: str
    host_key: str  # "ssh-ed25519 AAAA…"
    private_key: str
    user: str = "root"


@contextmanager
def known_hosts(host: SshHost) -> Iterator[str]:
    """A known_hosts file that pins exactly the host's key."""
    with tempfile.NamedTemporaryFile("w", prefix="benchlab-known-hosts-", suffix=".txt") as file:
        file.write(f"{host.address} {host.host_key}\n")
        file.flush()
        yield file.name


def ssh_argv(host: SshHost, known_hosts_file: str, remote_command: str) -> list[str]:
    """Plain OpenSSH with no configuration but the lab's key and the pinned host key."""
    return [
        "ssh", "-F", "none", "-i", host.private_key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
        "-o", f"UserKnownHostsFile={known_hosts_file}", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10",
        f"{host.user}@{host.address}", remote_command,
    ]  # fmt: skip


def ssh(host: SshHost, known_hosts_file: str, remote_command: str, timeout: float) -> subprocess.CompletedProcess[str]:
    argv = ssh_argv(host, known_hosts_file, remote_command)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class DirectResult:
    stdout: str  # pgbench's summary
    stderr: str  # its progress lines
    exit_status: int
    command: str
    init_output: str
    mount_options: str
    gap_s: float | None  # from the end of `pgbench -i` to pgbench's start


@dataclass(frozen=True)
class SetupOutput:
    mount_options: str
    settings: dict[str, str]
    loaded_epoch: float | None
    init_output: str


def parse_setup_output(text: str) -> SetupOutput:
    """What setup_script printed: the mount's options, the server's non-default settings, when
    the load ended; and before that, `pgbench -i`'s output."""
    mount_options, settings, loaded, before = "", {}, None, []
    for line in text.splitlines():
        if line.startswith("mount_options "):
            mount_options = line.removeprefix("mount_options ")
        elif line.startswith("settings "):
            settings = {str(k): str(v) for k, v in json.loads(line.removeprefix("settings ")).items()}
        elif line.startswith("loaded "):
            loaded = float(line.removeprefix("loaded "))
        else:
            before.append(line)
    return SetupOutput(mount_options, settings, loaded, "\n".join(before))


def started_epoch(stderr: str) -> float | None:
    """When measure_script started pgbench (it says so on stderr, just before)."""
    said = [line for line in stderr.splitlines() if line.startswith("started ")]
    return float(said[0].removeprefix("started ")) if said else None


def settings_difference(benchlab: dict[str, str], direct: dict[str, str]) -> dict[str, tuple[str | None, str | None]]:
    names = (set(benchlab) | set(direct)) - set(OWN_SETTINGS)
    return {n: (benchlab.get(n), direct.get(n)) for n in sorted(names) if benchlab.get(n) != direct.get(n)}


def direct_run(
    host: SshHost, known_hosts_file: str, recorded: Recorded, place: Place, gap_s: float, timeout_s: float
) -> DirectResult:
    """Set up and measure in one ssh session, then clean up (always, in another); what pgbench
    printed. Raises if the setup or the cleanup failed, or if the storage or the settings
    differed from the benchlab run's (the measurement does not count then)."""
    try:
        session = ssh(host, known_hosts_file, shlex.join(["sh", "-c", run_script(recorded, place, gap_s)]), timeout_s)
        setup_output, marker, pgbench_stdout = session.stdout.partition(f"{PGBENCH_FOLLOWS}\n")
        if not marker:
            output = session.stdout[-2000:] + session.stderr[-2000:]
            raise RuntimeError(f"direct setup failed ({session.returncode}): {output}")
        facts = parse_setup_output(setup_output)
        if facts.mount_options != recorded.mount_options:
            said = f"mounted with {facts.mount_options!r}, the benchlab run with {recorded.mount_options!r}"
            raise RuntimeError(said)
        differ = settings_difference(recorded.settings, facts.settings)
        if differ:
            raise RuntimeError(f"settings differ from the benchlab run's: {differ}")
        started = started_epoch(session.stderr)
        gap = started - facts.loaded_epoch if started is not None and facts.loaded_epoch is not None else None
        return DirectResult(
            stdout=pgbench_stdout,
            stderr=session.stderr,
            exit_status=session.returncode,
            command=shlex.join(retargeted(recorded.command, place, log_prefix=True)),
            init_output=facts.init_output,
            mount_options=facts.mount_options,
            gap_s=gap,
        )
    finally:
        cleaned = ssh(host, known_hosts_file, shlex.join(cleanup_argv(recorded, place)), 600)
        if cleaned.returncode != 0:
            raise RuntimeError(f"direct cleanup failed on {host.address}: {cleaned.stdout}{cleaned.stderr}")
