"""One benchmark on one lab host, start to finish: the lab layer's pieces in order.

storage (check, mkfs, mount) → throw-away cluster (initdb, settings, start) → `pgbench -i`
→ detached `pgbench` followed line by line, with iostat/vmstat and PostgreSQL statistics
around it → results → cleanup, which runs on every path because each stage is a context
manager. An observer hears about steps and progress as they happen.

pgbench runs on the server itself (over the unix socket), or on client hosts over TCP: then
the cluster listens on the network and trusts exactly those clients' addresses, and each
client's round trip to it is measured. Several client hosts measure together, each against
its own database or all against one (clients.py). Databases are always loaded on the server
(`pgbench -i` over the socket), every one before any client starts: loading is not what is
measured, and it does not depend on the network.

A run may keep its storage and stopped cluster for the next run of the same setup (keep=True),
and a run may start from such a kept setup (reuse=...) instead of mkfs and `pgbench -i`; see
kept.py. A kept setup given to a run is used up by it on every path: reused, or discarded.

When the measurement starts, a record of it goes into the run directory (collect.py): if the
worker running this dies, another one follows pgbench to its end and finishes the run from
there (resume.py).

A failure once the storage is prepared, or a pgbench that exits non-zero, is looked into
(diagnose.py): when the device is why (I/O errors, a full disk), the run fails with
StorageFailed, which says so in PostgreSQL's and the kernel's words.
"""

import logging
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from runs.lab.clients import (
    ClientBench,
    ClientFailed,
    ClientResult,
    client_pgbench_version,
    collect_several,
    follow_together,
    joined_commands,
    measure_rtt,
    start_skew_ms,
    start_together,
)
from runs.lab.collect import BenchmarkResult as BenchmarkResult  # re-exported: the service stores these
from runs.lab.collect import (
    Measured,
    collect_results,
    collect_server_results,
    progress_reader,
    resume_record,
    write_resume_record,
)
from runs.lab.diagnose import FaultWatch, command_output_tail
from runs.lab.follow import Follower, run_followed
from runs.lab.kept import Handover, handed_over, keep_setup, reused_database_note, reused_storage
from runs.lab.kept import KeptSetup as KeptSetup  # re-exported: the service stores and hands these back
from runs.lab.kept import discard_kept_setup as discard_kept_setup
from runs.lab.metrics import PgStatsSnapshot, iostat_device, os_metrics, pg_stats_snapshot
from runs.lab.parse_pgbench import ProgressSample
from runs.lab.pgbench import (
    Connection,
    Detached,
    InitOptions,
    RunOptions,
    cancel,
    create_database_command,
    init_command,
    run_command,
    start_detached,
    wait_for_exit,
)
from runs.lab.postgres import BENCH_ROLE, SUPERUSER, Cluster, psql, running_cluster, throwaway_cluster
from runs.lab.run_user import RUN_USER, ensure_run_user, run_as_run_user, stop_run_user_processes
from runs.lab.storage import DeviceIdentity, FilesystemSpec, PreparedStorage, kernel_log_cursor, prepared_storage
from runs.lab.transport import Transport, clean_text

log = logging.getLogger(__name__)
RUNS_ROOT = "/var/lib/benchlab/runs"  # on the host's own disk, not on the device under test
WORK_SUBDIR = "bench"  # run_dir/bench: the unprivileged user's (run_user.py)
INIT_TIMEOUT_S = 6 * 3600  # `pgbench -i` of a large scale on a slow disk takes hours


class Step:
    PREPARING_STORAGE = "preparing storage"
    INITIALIZING_DATABASE = "initializing database"
    MEASURING = "measuring"
    COLLECTING = "collecting"
    CLEANING_UP = "cleaning up"


@dataclass(frozen=True)
class ClientSpec:
    """pgbench on another host, reaching the server over TCP."""

    pg_bin_dir: str  # the client's own pgbench
    address: str  # the client as the server sees it: trusted in pg_hba
    server_address: str  # the server as the client reaches it
    name: str = "client"  # as the inventory names the host: said in the log and in failures
    database: str = "bench"  # the database on the server it runs against


@dataclass(frozen=True)
class Endpoint:
    """A host benchlab talks to, and how to open a fresh connection to it (for reconnects)."""

    transport: Transport
    connect: Callable[[], Transport]


@dataclass(frozen=True)
class BenchmarkSpec:
    device: DeviceIdentity
    filesystem: FilesystemSpec
    pg_bin_dir: str
    init: InitOptions
    run: RunOptions
    run_key: str  # unique per run: names the mountpoint and the run directory
    pg_settings: Mapping[str, str] = field(default_factory=dict)
    database: str = "bench"
    clients: tuple[ClientSpec, ...] = ()  # none: pgbench runs on the server
    warmup_s: int = 0  # the first seconds of run.duration_s, left out of the latency percentiles
    unreachable_limit_s: float = 300.0  # how long a host that stopped answering is waited for

    @property
    def databases(self) -> list[str]:
        """The databases to load, in order: the clients' (each its own, or one shared), or the one."""
        return list(dict.fromkeys(client.database for client in self.clients)) or [self.database]


class Observer(Protocol):
    def step(self, name: str) -> None: ...

    def line(self, stream: str, text: str) -> None: ...

    def progress(self, sample: ProgressSample) -> None: ...

    def started(self, process: Detached, on: str | None = None) -> None:
        """A detached command runs now (a cancel stops it), on the client host named `on` or the server."""
        ...

    def client_progress(self, name: str, sample: ProgressSample) -> None:
        """A second of one client host's pgbench, in a run with several (progress() gets their total)."""
        ...

    def followed(self, offset: int) -> None:
        """pgbench's progress output has been handed over (line, progress) up to byte `offset`."""
        ...

    def formatting(self, command: str) -> None:
        """mkfs is about to run (every safety check has passed)."""
        ...


class SilentObserver:
    def step(self, name: str) -> None:
        log.info("step: %s", name)

    def line(self, stream: str, text: str) -> None:
        pass

    def progress(self, sample: ProgressSample) -> None:
        pass

    def started(self, process: Detached, on: str | None = None) -> None:
        pass

    def client_progress(self, name: str, sample: ProgressSample) -> None:
        pass

    def followed(self, offset: int) -> None:
        pass

    def formatting(self, command: str) -> None:
        log.info("formatting: %s", command)


def run_dir_for(run_key: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]+", run_key):
        raise ValueError(f"bad run key {run_key!r}")
    return f"{RUNS_ROOT}/{run_key}"


def work_dir_for(run_dir: str) -> str:
    """The unprivileged user's part of a run directory: pgbench's output and logs."""
    return f"{run_dir}/{WORK_SUBDIR}"


def _as_run_user(transport: Transport, argv: list[str], timeout: float, on_line: Callable[[str], None]) -> str:
    def clean(line: str) -> None:
        on_line(clean_text(line))

    result = run_as_run_user(transport, argv, timeout=timeout, on_stderr=clean, on_stdout=clean)
    return result.stdout + result.stderr


def _prepare_hosts(endpoints: list[Endpoint], run_dir: str) -> None:
    """The run's user and directories on each host: run_dir is root's (iostat, vmstat, the custom
    script), its work dir the unprivileged user's (pgbench writes there, and nothing else does).
    Whatever the user left running from an earlier run is stopped first."""
    for endpoint in endpoints:
        transport = endpoint.transport
        ensure_run_user(transport)
        stop_run_user_processes(transport)
        # Each level explicitly: a restrictive umask must not lock the user out of its work dir.
        transport.run(["install", "-d", "-m", "0755", str(Path(RUNS_ROOT).parent), RUNS_ROOT, run_dir])
        owner = ["-o", RUN_USER, "-g", RUN_USER]
        transport.run(["install", "-d", "-m", "0700", *owner, work_dir_for(run_dir)])


def run_benchmark(
    transport: Transport,
    connect: Callable[[], Transport],
    spec: BenchmarkSpec,
    observer: Observer | None = None,
    measure_timeout_s: float | None = None,
    clients: Sequence[Endpoint] = (),
    reuse: KeptSetup | None = None,
    keep: bool = False,
) -> BenchmarkResult:
    """Run the whole benchmark; cleanup (stop PostgreSQL, unmount) happens on every path.

    `connect` opens a fresh connection to the same host: the follower reconnects with it
    when the connection is lost mid-run. `clients` are where pgbench runs when spec.clients
    names client hosts, in the same order. `reuse` is a setup an earlier run kept on this host: used
    if it still fits, discarded otherwise (result.reused, result.reuse_refused), and gone
    from the host after the call in any case unless kept again. With `keep`, a run that
    succeeded leaves its storage and stopped cluster on the host (result.kept). A kept setup
    holds one database: a run with a database per client host neither reuses nor keeps one.
    """
    observer = observer or SilentObserver()
    server = Endpoint(transport, connect)
    with ExitStack() as cleanup:
        # Unwound last: a kept setup the run did not get to take over is discarded.
        handover = cleanup.enter_context(handed_over(transport, reuse)) if reuse is not None else None
        # Refuse a bad specification before the run touches the host.
        spec.init.validate()
        spec.run.validate()
        if len(spec.clients) != len(clients):
            raise ValueError("each client host needs both its specification and its connection")
        if (reuse is not None or keep) and len(spec.databases) > 1:
            raise ValueError("a run with a database per client host cannot reuse or keep a setup")
        run_dir = run_dir_for(spec.run_key)
        try:
            benches = [Bench(c.name, endpoint, c) for c, endpoint in zip(spec.clients, clients, strict=True)]
            return _run_stages(server, benches, spec, observer, cleanup, run_dir, measure_timeout_s, handover, keep)
        finally:
            # Runs before the stages' own cleanups unwind (unmount, stop PostgreSQL).
            observer.step(Step.CLEANING_UP)


@dataclass(frozen=True)
class Bench:
    """Where one pgbench runs: a client host, or the server itself (client None)."""

    name: str | None  # the client host's name; None: the server
    endpoint: Endpoint
    client: ClientSpec | None


def _run_stages(
    server: Endpoint,
    client_benches: list[Bench],
    spec: BenchmarkSpec,
    observer: Observer,
    cleanup: ExitStack,
    run_dir: str,
    measure_timeout_s: float | None,
    handover: Handover | None,
    keep: bool,
) -> BenchmarkResult:
    transport = server.transport
    benches = client_benches or [Bench(None, server, None)]
    observer.step(Step.PREPARING_STORAGE)
    since = kernel_log_cursor(transport)  # before the run touches the device: its faults are logged after this
    endpoints = list({id(e): e for e in [server, *(bench.endpoint for bench in benches)]}.values())
    _prepare_hosts(endpoints, run_dir)
    work_dir = work_dir_for(run_dir)
    kept, refused = None, ""
    if handover is not None:
        kept, refused = handover.take_or_discard(
            spec.device, spec.filesystem, spec.pg_bin_dir, spec.init, spec.database
        )
    if kept is None:
        storage = cleanup.enter_context(
            prepared_storage(transport, spec.device, spec.filesystem, spec.run_key, before_mkfs=observer.formatting)
        )
    else:  # no mkfs, no mount: and the mountpoint stays the one named after the run that kept it
        storage = cleanup.enter_context(reused_storage(transport, kept))
    # Unwound after the cluster has stopped and before the unmount: nothing of the run's user
    # outlives the run, or keeps the mount busy.
    for endpoint in endpoints:
        cleanup.callback(stop_run_user_processes, endpoint.transport)
    # From here a failure may be the device's: it is then told in PostgreSQL's and the kernel's
    # words (unwound after PostgreSQL has stopped, before the unmount).
    watch = cleanup.enter_context(FaultWatch(transport, storage, spec.device, since).explaining())
    result = BenchmarkResult(storage=storage, run_dir=run_dir, reused=kept is not None, reuse_refused=refused)

    observer.step(Step.INITIALIZING_DATABASE)
    cluster = watch.cluster = cleanup.enter_context(_cluster(transport, spec, storage, kept))
    result.pg_version, result.pg_settings = cluster.version, cluster.settings
    result.pg_non_default_settings = cluster.non_default_settings
    if kept is None:
        watch.doing, watch.scale = f"loading scale {spec.init.scale} with pgbench -i", spec.init.scale
        result.init_command, result.init_output = _load_databases(server, spec, cluster, observer, run_dir)
    else:  # loaded by the run that kept it
        result.init_output = reused_database_note(transport, cluster, kept)
    # The barrier's first half: every database is loaded before any client starts.
    result.loaded_epoch = float(transport.run(["date", "+%s.%N"]).stdout.strip())

    script_path = None
    if spec.run.custom_script is not None:
        script_path = f"{run_dir}/custom.sql"  # root's directory: the user reads it, cannot swap it
        for bench in benches:
            bench.endpoint.transport.write_file(script_path, spec.run.custom_script.encode(), mode=0o644)
    measuring = _measuring(spec, cluster, benches, work_dir, script_path)
    result.command = joined_commands(measuring) if len(measuring) > 1 else measuring[0].command_text
    result.pgbench_version = measuring[0].result.pgbench_version
    result.clients = [m.result for m in measuring if m.result.name]

    observer.step(Step.MEASURING)
    watch.doing, watch.scale = "measuring", None
    before = pg_stats_snapshot(transport, cluster, spec.databases)
    device = iostat_device(transport, storage.device_node, storage.mountpoint)
    # A run with -t has no known length; its metrics stop after an hour at most.
    metrics_seconds = (spec.run.duration_s or 3600) + 600
    timeout = measure_timeout_s or (spec.run.duration_s or 3600) + 120
    with os_metrics(transport, run_dir, device, metrics_seconds) as metrics:
        if len(measuring) == 1:
            process = _measure_one(server, measuring[0], spec, observer, cleanup, result, storage, cluster, before,
                                   device, timeout)  # fmt: skip
        else:
            processes = _measure_several(measuring, spec, observer, cleanup, result, timeout)

    if result.exit_status != 0:  # the storage may be why: then the run fails saying so
        failing = next((m for m in measuring if m.result.exit_status not in (0, None)), measuring[0])
        failing_process = process if len(measuring) == 1 else processes[measuring.index(failing)]
        stderr = command_output_tail(failing.endpoint.transport, failing_process.path("stderr"))
        watch.raise_if_faulty(result.command, result.exit_status, stderr)

    observer.step(Step.COLLECTING)
    watch.doing = "collecting the results"
    result.os = metrics
    if len(measuring) == 1:
        pgbench_host = measuring[0].endpoint.transport
        measured = Measured(transport, pgbench_host, cluster, spec.databases, before, process, spec.run, spec.warmup_s)
        collect_results(result, measured)
        _one_client_result(result, measuring[0], process)
    else:
        collect_server_results(result, transport, cluster, spec.databases, before)
        collect_several(result, measuring, processes, spec.run, spec.warmup_s)
    if keep and result.exit_status == 0:
        result.kept = keep_setup(transport, storage, cluster, spec.database, spec.init.scale)
    return result


def _measuring(
    spec: BenchmarkSpec, cluster: Cluster, benches: list[Bench], work_dir: str, script_path: str | None
) -> list[ClientBench]:
    """Each pgbench's command line, version and (from a client host) round trip to the server."""
    measuring = []
    for bench in benches:
        if bench.client is None:
            connection = Connection(host=cluster.socket_dir, port=cluster.port, database=spec.database, user=BENCH_ROLE)
            bin_dir = spec.pg_bin_dir
        else:
            client = bench.client
            connection = Connection(host=client.server_address, port=cluster.port, database=client.database,
                                    user=BENCH_ROLE)  # fmt: skip
            bin_dir = client.pg_bin_dir
        command = run_command(bin_dir, connection, spec.run, work_dir, script_path)
        transport = bench.endpoint.transport
        result = ClientResult(name=bench.name or "", database=connection.database, command=shlex.join(command),
                              pgbench_version=client_pgbench_version(transport, bin_dir))  # fmt: skip
        if bench.client is not None:
            result.rtt_ms = measure_rtt(transport, bench.client.server_address, cluster.port)
        measuring.append(ClientBench(bench.name or "", bench.endpoint, command, result))
    return measuring


def _measure_one(
    server: Endpoint,
    bench: ClientBench,
    spec: BenchmarkSpec,
    observer: Observer,
    cleanup: ExitStack,
    result: BenchmarkResult,
    storage: PreparedStorage,
    cluster: Cluster,
    before: PgStatsSnapshot,
    device: str | None,
    timeout: float,
) -> Detached:
    """pgbench on the server or on the one client host, followed to its end; resumable by
    another worker if this one dies (resume.py)."""
    on_server = bench.endpoint is server
    work_dir = work_dir_for(result.run_dir)
    process = start_detached(bench.endpoint.transport, bench.command, work_dir, "pgbench", user=RUN_USER)
    if on_server:
        storage.own_pids.append(process.pid)
    # On a failure below, pgbench must not go on loading the host (a no-op once it has exited).
    cleanup.callback(cancel, bench.endpoint.transport, process, 2.0)
    observer.started(process, on=None if on_server else bench.name)
    # If this worker dies now, another one finishes the run from this record (resume.py).
    resume = resume_record(spec.run_key, result, cluster, process, on_server, before, device)
    write_resume_record(server.transport, result.run_dir, resume)
    follower = Follower(bench.endpoint.connect, process, "stderr", progress_reader(observer, result),
                        max_reconnect_s=spec.unreachable_limit_s, on_offset=observer.followed)  # fmt: skip
    follower.follow(timeout)
    result.exit_status = wait_for_exit(bench.endpoint.transport, process, 60)  # it has exited: the status is on its way
    return process


def _one_client_result(result: BenchmarkResult, bench: ClientBench, process: Detached) -> None:
    """The one client host's share is the whole run."""
    if not bench.name:
        return
    client = bench.result
    client.exit_status, client.progress, client.summary = result.exit_status, result.progress, result.summary
    client.latency = result.latency
    start_skew_ms([bench], [process])  # reads its start time; one client has no skew


def _measure_several(
    measuring: list[ClientBench],
    spec: BenchmarkSpec,
    observer: Observer,
    cleanup: ExitStack,
    result: BenchmarkResult,
    timeout: float,
) -> list[Detached]:
    """pgbench on every client host at once, behind the barrier, followed together. A client
    that fails stops the others; its name and status go into the result (the run fails)."""
    processes = start_together(measuring, work_dir_for(result.run_dir))
    for bench, process in zip(measuring, processes, strict=True):
        cleanup.callback(cancel, bench.endpoint.transport, process, 2.0)
        observer.started(process, on=bench.name)
    result.start_skew_ms = start_skew_ms(measuring, processes)

    def total(sample: ProgressSample) -> None:
        result.progress.append(sample)
        observer.progress(sample)

    try:
        follow_together(measuring, processes, observer, total, timeout, spec.unreachable_limit_s)
        result.exit_status = 0
    except ClientFailed as failed:
        result.failed_client = failed.client
        statuses = [m.result.exit_status for m in measuring]
        result.exit_status = next((status for status in statuses if status not in (0, None)), -1)
        result.failure = str(failed)
    return processes


def _cluster(
    transport: Transport, spec: BenchmarkSpec, storage: PreparedStorage, kept: KeptSetup | None
) -> AbstractContextManager[Cluster]:
    """A new cluster on fresh storage, or the kept one started again: either way with this run's
    settings and exactly its client hosts' addresses, on a port chosen for this run."""
    addresses = [client.address for client in spec.clients]
    listen_on = _listen_addresses(transport, spec) if spec.clients else []
    pids = storage.own_pids
    if kept is None:
        base_dir = f"{storage.mountpoint}/postgres"
        return throwaway_cluster(transport, spec.pg_bin_dir, base_dir, spec.pg_settings, addresses, pids, listen_on)
    existing = Cluster(bin_dir=spec.pg_bin_dir, base_dir=kept.base_dir, port=0)
    return running_cluster(transport, existing, spec.pg_settings, addresses, pids, listen_on)


def _listen_addresses(transport: Transport, spec: BenchmarkSpec) -> list[str]:
    """The server's own addresses its clients reach it by. An address the server does not have
    (a name, a NAT) cannot be listened on: then every interface, and pg_hba alone keeps others out."""
    own = set(transport.run(["hostname", "-I"], check=False).stdout.split())
    wanted = list(dict.fromkeys(client.server_address for client in spec.clients))
    return wanted if all(address in own for address in wanted) else []


def _load_databases(
    server: Endpoint, spec: BenchmarkSpec, cluster: Cluster, observer: Observer, run_dir: str
) -> tuple[str, str]:
    """pgbench's role and each database, loaded with `pgbench -i` over the socket, one after the
    other: their commands and outputs. A load runs detached (it may take hours): a network blip
    does not end it, a cancel does."""
    psql(server.transport, cluster, f"CREATE ROLE {BENCH_ROLE} LOGIN")
    loads = [_load_database(server, spec, cluster, database, observer, run_dir) for database in spec.databases]
    if len(loads) == 1:
        return loads[0]
    return "\n".join(command for command, _ in loads), "".join(output for _, output in loads)


def _load_database(
    server: Endpoint, spec: BenchmarkSpec, cluster: Cluster, database: str, observer: Observer, run_dir: str
) -> tuple[str, str]:
    transport = server.transport
    admin = Connection(host=cluster.socket_dir, port=cluster.port, database=database, user=SUPERUSER)
    local = Connection(host=cluster.socket_dir, port=cluster.port, database=database, user=BENCH_ROLE)
    _as_run_user(transport, create_database_command(spec.pg_bin_dir, admin, BENCH_ROLE), 60, lambda _: None)
    init = init_command(spec.pg_bin_dir, local, spec.init)
    name = "pgbench-init" if len(spec.databases) == 1 else f"pgbench-init-{database.replace('_', '-')}"
    place = Detached(run_dir=work_dir_for(run_dir), name=name, pid=0, user=RUN_USER)
    output = run_followed(transport, server.connect, init, place, lambda text: observer.line("init", text),
                          observer.started, INIT_TIMEOUT_S, max_reconnect_s=spec.unreachable_limit_s)  # fmt: skip
    return shlex.join(init), output


def remove_run_dir(transport: Transport, run_key: str) -> None:
    transport.run(["rm", "-rf", "--", run_dir_for(run_key)], check=False)
