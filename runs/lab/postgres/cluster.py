"""A throw-away PostgreSQL cluster on the storage under test.

`throwaway_cluster` is a setup/cleanup pair: initdb as benchlab's unprivileged OS user
(run_user.py) into a subdirectory of the mount, apply settings, start; on the way out
(always) stop immediately and remove its data (discard_cluster: no shutdown checkpoint for
files thrown away), unless a run kept it, and make sure the postmaster's PID is really gone.
`running_cluster` is the same pair for a cluster that exists already (one an earlier run kept).
Everything in the cluster's directory is the user's, so benchlab touches it only as the user.

A run's settings and client rules are rewritten for each start, never added to the last
run's: postgresql.conf includes benchlab.conf, which configure() replaces, and pg_hba.conf
is made anew from initdb's own (kept aside) plus this run's clients.
"""

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from runs.lab.errors import CommandFailed, LabError, tail
from runs.lab.host.run_user import (
    RUN_USER,
    append_as_run_user,
    process_alive,
    read_as_run_user,
    run_as_run_user,
    signal_as_run_user,
    write_as_run_user,
)
from runs.lab.options import HBA_KEYWORDS as HBA_KEYWORDS  # re-exported: checked without a host
from runs.lab.options import hba_address as hba_address
from runs.lab.options import parse_settings as parse_settings
from runs.lab.postgres.settings import RESERVED_SETTINGS as RESERVED_SETTINGS  # re-exported, as before
from runs.lab.postgres.settings import check_setting
from runs.lab.transport.interface import Transport
from runs.lab.transport.waiting import wait_until

SUPERUSER = "postgres"  # the cluster's superuser role (initdb -U), whatever OS user runs it
# pgbench connects as this role, which owns the benchmark database and nothing else: a custom
# script cannot use what only a superuser may (COPY ... TO PROGRAM, ALTER SYSTEM, ...), and a
# client host is let in (pg_hba) as this role only.
BENCH_ROLE = "bench"
PORT_RANGE = range(54320, 54999)
START_TIMEOUT_S = 300  # initdb'd clusters on a slow disk take long for the first checkpoint
STOP_TIMEOUT_S = 180  # the shutdown checkpoint on the "HDD" took 10-40 s in the lab
SETTINGS_FILE = "benchlab.conf"  # in the data directory: this run's settings, included by postgresql.conf
HBA_ORIGINAL = "pg_hba.conf.initdb"  # in the data directory: initdb's pg_hba.conf, kept aside
# The log as benchlab reads the checkpoints from it (lab.parse.postgres_log): every line stamped to the
# millisecond in UTC (the host's zone may be any), and each checkpoint logged (off before PostgreSQL
# 15) unless the user's settings say otherwise.
LOG_SETTINGS = {"log_line_prefix": "%m [%p] ", "log_timezone": "UTC"}
LOGGED_UNLESS_SET = {"log_checkpoints": "on"}


@dataclass
class Cluster:
    bin_dir: str
    base_dir: str  # our directory on the mount
    port: int
    version: str = ""
    postmaster_pid: int | None = None
    settings: list[dict[str, str | None]] = field(default_factory=list)  # pg_settings as captured
    # Stopped cleanly and left for the next run (storage/kept.py): the way out must not throw it away.
    kept: bool = False

    @property
    def data_dir(self) -> str:
        return f"{self.base_dir}/pgdata"

    @property
    def socket_dir(self) -> str:
        return f"{self.base_dir}/socket"

    @property
    def log_file(self) -> str:
        return f"{self.base_dir}/postgresql.log"

    def tool(self, name: str) -> str:
        return f"{self.bin_dir}/{name}"

    @property
    def non_default_settings(self) -> dict[str, str]:
        # "client" and "session" values belong to the psql session that read them
        # (application_name=psql), not to the server under test.
        return {
            str(s["name"]): str(s["setting"])
            for s in self.settings
            if s.get("source") not in ("default", "override", "client", "session") and s.get("name")
        }


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def free_port(transport: Transport) -> int:
    listening = transport.run(["ss", "-Htln"]).stdout
    used = {int(m.group(1)) for m in re.finditer(r":(\d+)\s", listening)}
    # Only TCP listeners: each throw-away cluster's unix socket is in its own directory.
    for port in PORT_RANGE:
        if port not in used:
            return port
    raise LabError("no free port for PostgreSQL in 54320-54998")


def initdb(transport: Transport, bin_dir: str, base_dir: str) -> Cluster:
    """A new cluster in base_dir (on the run's own mount, which only root may write to), as
    RUN_USER (run_user.ensure_run_user() has made sure it exists)."""
    transport.run(["mkdir", "-m", "0700", base_dir])
    transport.run(["chown", "-h", f"{RUN_USER}:", base_dir])  # -h: never through a symlink
    cluster = Cluster(bin_dir=bin_dir, base_dir=base_dir, port=0)
    run_as_run_user(transport, ["mkdir", "-m", "0700", cluster.socket_dir])
    # Unix sockets (in a directory only the user can enter) are trusted; TCP is refused, except
    # for a client host's pgbench (configure() adds exactly that).
    auth = ["-U", SUPERUSER, "--auth-local=trust", "--auth-host=reject"]
    initdb_argv = [cluster.tool("initdb"), "-D", cluster.data_dir, *auth, "-E", "UTF8", "--locale=C", "-N"]
    run_as_run_user(transport, initdb_argv, timeout=600)
    # Once, at the end, so that benchlab's settings win over initdb's (shared_buffers, ...).
    include = f"\n# benchlab: the settings of the run that started the cluster last\ninclude '{SETTINGS_FILE}'\n"
    append_as_run_user(transport, f"{cluster.data_dir}/postgresql.conf", include)
    original_hba = read_as_run_user(transport, f"{cluster.data_dir}/pg_hba.conf")
    write_as_run_user(transport, f"{cluster.data_dir}/{HBA_ORIGINAL}", original_hba)
    return cluster


def configure(
    transport: Transport,
    cluster: Cluster,
    settings: Mapping[str, str],
    client_addresses: Sequence[str] = (),
    listen_on: Sequence[str] = (),
) -> None:
    """Write benchlab's settings and the user's overrides; open pg_hba to exactly the client
    hosts, and listen on `listen_on` (the server's addresses the clients reach it by; none
    given: on every interface, which pg_hba still closes to anyone but the clients).

    Both files are replaced, not appended to: a cluster an earlier run kept gets this run's
    settings and clients only. The port is chosen anew each time."""
    for key, value in settings.items():
        check_setting(key, value)  # also when the caller did not come through parse_settings
    cluster.port = free_port(transport)
    lines = [
        "# benchlab",
        f"port = {cluster.port}",
        f"unix_socket_directories = {_quote(cluster.socket_dir)}",
        f"listen_addresses = {_quote(','.join(listen_on) or '*' if client_addresses else '')}",
        *(f"{key} = {_quote(value)}" for key, value in LOG_SETTINGS.items()),
        *(f"{key} = {_quote(value)}" for key, value in LOGGED_UNLESS_SET.items() if key not in settings),
        *(f"{key} = {_quote(value)}" for key, value in settings.items()),
    ]
    write_as_run_user(transport, f"{cluster.data_dir}/{SETTINGS_FILE}", "\n".join(lines) + "\n")
    # After initdb's rules, as before: only pgbench's role, from exactly those hosts (not the
    # superuser, not a network).
    hba = read_as_run_user(transport, f"{cluster.data_dir}/{HBA_ORIGINAL}")
    hba += "" if hba.endswith("\n") or not hba else "\n"
    hba += "".join(f"host all {BENCH_ROLE} {hba_address(address)} trust\n" for address in client_addresses)
    write_as_run_user(transport, f"{cluster.data_dir}/pg_hba.conf", hba)


def start(transport: Transport, cluster: Cluster) -> None:
    argv = [cluster.tool("pg_ctl"), "-D", cluster.data_dir, "-l", cluster.log_file, "-w", "-t", str(START_TIMEOUT_S)]
    try:
        run_as_run_user(transport, [*argv, "start"], timeout=START_TIMEOUT_S + 30)
    except CommandFailed as exc:
        # pg_ctl only says "could not start server"; PostgreSQL's reason is in its log.
        log = read_as_run_user(transport, cluster.log_file, check=False)
        raise CommandFailed(exc.command, exc.exit_status, exc.stdout, tail(log, 15) or exc.stderr, exc.host) from exc
    cluster.postmaster_pid = _postmaster_pid(transport, cluster)
    cluster.version = psql(transport, cluster, "SELECT version()")
    cluster.settings = json.loads(
        psql(
            transport,
            cluster,
            "SELECT json_agg(json_build_object('name', name, 'setting', setting, 'unit', unit,"
            " 'source', source, 'boot_val', boot_val) ORDER BY name) FROM pg_settings",
        )
    )


def _postmaster_pid(transport: Transport, cluster: Cluster) -> int | None:
    # The user's file, read as the user: it could be a symlink to anything.
    first_line = read_as_run_user(transport, f"{cluster.data_dir}/postmaster.pid", check=False).partition("\n")[0]
    text = first_line.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def psql(transport: Transport, cluster: Cluster, sql: str, database: str = "postgres") -> str:
    argv = [cluster.tool("psql"), "-h", cluster.socket_dir, "-p", str(cluster.port), "-U", SUPERUSER, "-d", database]
    return run_as_run_user(transport, [*argv, "-AtX", "-v", "ON_ERROR_STOP=1", "-c", sql]).stdout.strip()


def server_page_sizes(transport: Transport, cluster: Cluster) -> tuple[int, int]:
    """The page size and WAL block size the running server was compiled with, in bytes: what a
    run records (the inventory's figures are what an admin typed or a probe read earlier)."""
    found = psql(transport, cluster, "SELECT current_setting('block_size') || ' ' || current_setting('wal_block_size')")
    block_size, wal_block_size = found.split()
    return int(block_size), int(wal_block_size)


def _pg_ctl_stop(transport: Transport, cluster: Cluster, mode: str, timeout: int) -> None:
    ctl = [cluster.tool("pg_ctl"), "-D", cluster.data_dir, "-w", "-t", str(timeout), "-m", mode, "stop"]
    run_as_run_user(transport, ctl, check=False, timeout=timeout + 30)


def stop_fast(transport: Transport, cluster: Cluster) -> bool:
    """Only `pg_ctl stop -m fast` (it ends with a shutdown checkpoint, so the cluster starts
    again without recovery). True if the postmaster is gone (or was not running)."""
    pid = cluster.postmaster_pid or _postmaster_pid(transport, cluster)
    if pid is None or not process_alive(transport, pid):
        return True
    _pg_ctl_stop(transport, cluster, "fast", STOP_TIMEOUT_S)
    return not process_alive(transport, pid)


def stop(transport: Transport, cluster: Cluster, immediate: bool = False) -> None:
    """Stop fast, then immediate (only immediate, if asked); then check the postmaster PID
    ourselves and kill it if needed.

    After an I/O error pg_ctl may report failure although postgres exited (it cannot remove
    postmaster.pid), or the reverse; only the PID tells the truth.
    """
    pid = cluster.postmaster_pid or _postmaster_pid(transport, cluster)
    if pid is None or not process_alive(transport, pid):
        return
    modes = (("fast", STOP_TIMEOUT_S), ("immediate", 60))
    for mode, timeout in modes[1:] if immediate else modes:
        _pg_ctl_stop(transport, cluster, mode, timeout)
        if not process_alive(transport, pid):
            return
    # The PID came from a file the user writes: only the user's own process can be killed by it.
    signal_as_run_user(transport, str(pid), "KILL")
    if not wait_until(lambda: not process_alive(transport, pid), 30, 0.2):
        raise LabError(f"postmaster {pid} survived SIGKILL")


def discard_cluster(transport: Transport, cluster: Cluster) -> None:
    """A cluster nothing will start again, stopped and its data removed before the unmount.

    Stopped immediately: `-m fast` ends with a shutdown checkpoint that writes every dirty buffer
    and fsyncs every file, 16-35 s on the HDD-like disk, for files that are about to be thrown
    away. Its data directory is then removed while still mounted, so the kernel drops the dirty
    pages of those files instead of writing them back; what is left (the journal's record of the
    removal) the unmount and the device's sync (storage/prepare.py) write out, so the next run
    still starts on a quiet device. Never for a kept cluster: that one must start again without
    recovery (keep_setup stops it with `-m fast`, and marks it kept)."""
    stop(transport, cluster, immediate=True)
    # As the user who owns it, and never across into another filesystem.
    rm = ["rm", "-rf", "--one-file-system", "--", cluster.data_dir]
    run_as_run_user(transport, rm, check=False, timeout=STOP_TIMEOUT_S)


@contextmanager
def running_cluster(
    transport: Transport,
    cluster: Cluster,
    settings: Mapping[str, str],
    client_addresses: Sequence[str] = (),
    own_pids: list[int] | None = None,
    listen_on: Sequence[str] = (),
) -> Iterator[Cluster]:
    """configure + start an initdb'd cluster; always stop: a kept one is stopped cleanly already,
    any other is discarded (discard_cluster). The postmaster's PID is added to own_pids."""
    try:
        configure(transport, cluster, settings, client_addresses, listen_on)
        start(transport, cluster)
        if own_pids is not None and cluster.postmaster_pid:
            own_pids.append(cluster.postmaster_pid)
        yield cluster
    finally:
        if cluster.kept:
            stop(transport, cluster)  # makes sure only: keep_setup stopped it with -m fast
        else:
            discard_cluster(transport, cluster)


@contextmanager
def throwaway_cluster(
    transport: Transport,
    bin_dir: str,
    base_dir: str,
    settings: Mapping[str, str],
    client_addresses: Sequence[str] = (),
    own_pids: list[int] | None = None,
    listen_on: Sequence[str] = (),
) -> Iterator[Cluster]:
    """initdb + configure + start; always stop. The postmaster's PID is added to own_pids."""
    cluster = initdb(transport, bin_dir, base_dir)
    with running_cluster(transport, cluster, settings, client_addresses, own_pids, listen_on) as running:
        yield running
