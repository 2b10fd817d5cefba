"""The stages of one benchmark run, each a function over the run's Stages: benchmark.py calls
them in order. Each stage enters what it sets up into the run's ExitStack, so whatever
happens later, it is undone (unwound in reverse order) on every path.
"""

import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from runs.lab.benchmark.checkpoints import CheckpointWatch
from runs.lab.benchmark.clients import ClientBench, client_hosts, collect_several, joined_commands
from runs.lab.benchmark.collect import (
    BenchmarkResult,
    Measured,
    collect_results,
    collect_server_results,
    resume_record,
    write_resume_record,
)
from runs.lab.benchmark.drivers import Driver, driver_for
from runs.lab.benchmark.measure import (
    measure_one,
    measure_several,
    one_client_result,
    prepare_benches,
    recorded_clients,
)
from runs.lab.benchmark.method_readings import facts_before, note_window_end
from runs.lab.benchmark.metrics import OsMetrics, PgStatsSnapshot, iostat_device, os_metrics, pg_stats_snapshot
from runs.lab.benchmark.spec import RUNS_ROOT, Bench, BenchmarkSpec, Endpoint, Observer, Step, work_dir_for
from runs.lab.benchmark.state import bring_to_state
from runs.lab.host.run_user import RUN_USER, ensure_run_user, run_as_run_user, stop_run_user_processes
from runs.lab.host.smart import read_smart_after_run
from runs.lab.pgbench.commands import Connection, create_database_command
from runs.lab.pgbench.follow import run_followed
from runs.lab.postgres.cluster import BENCH_ROLE, SUPERUSER, Cluster, psql, running_cluster, throwaway_cluster
from runs.lab.storage.diagnose import FaultWatch, command_output_tail
from runs.lab.storage.kept import Handover, KeptSetup, keep_setup, reused_database_note, reused_storage
from runs.lab.storage.mounts import kernel_log_cursor
from runs.lab.storage.prepare import PreparedStorage, prepared_storage
from runs.lab.transport.interface import Transport, clean_text
from runs.lab.transport.process import Detached

INIT_TIMEOUT_S = 6 * 3600  # `pgbench -i` of a large scale on a slow disk takes hours


@contextmanager
def timed(stages: dict[str, float], name: str) -> Iterator[None]:
    """Add the seconds the block takes to stages[name]: where a run's wall time goes."""
    start = time.monotonic()
    try:
        yield
    finally:
        stages[name] = stages.get(name, 0.0) + time.monotonic() - start


@dataclass
class Stages:
    """One run as its stages go: what it was given, and what each stage leaves for the next."""

    server: Endpoint
    benches: list[Bench]  # where pgbench runs: the client hosts, or the server itself
    spec: BenchmarkSpec
    observer: Observer
    cleanup: ExitStack
    run_dir: str
    seconds: dict[str, float] = field(default_factory=dict)  # each stage's (BenchmarkResult.stages)
    storage: PreparedStorage | None = None
    kept: KeptSetup | None = None  # the setup an earlier run kept, when this run uses it
    watch: FaultWatch | None = None
    cluster: Cluster | None = None
    measuring: list[ClientBench] = field(default_factory=list)
    processes: list[Detached] = field(default_factory=list)  # pgbench's, one a bench
    before: PgStatsSnapshot | None = None
    device: str | None = None  # the kernel's name of the device iostat watches; None: none to watch

    @property
    def driver(self) -> Driver:
        return driver_for(self.spec.driver)

    @property
    def transport(self) -> Transport:
        return self.server.transport

    @property
    def endpoints(self) -> list[Endpoint]:
        """Every host of the run once: the server and the client hosts."""
        return list({id(e): e for e in [self.server, *(bench.endpoint for bench in self.benches)]}.values())


def prepare_storage(run: Stages, handover: Handover | None) -> BenchmarkResult:
    """The hosts made ready, then the storage: the kept setup taken over, or the device checked,
    formatted and mounted. From here a failure may be the device's (FaultWatch)."""
    run.observer.step(Step.PREPARING_STORAGE)
    with timed(run.seconds, "hosts"):
        since = kernel_log_cursor(run.transport)  # before the run touches the device: its faults come after
        _prepare_hosts(run.endpoints, run.run_dir)
    refused = ""
    if handover is not None:
        with timed(run.seconds, "kept setup checked"):
            spec = run.spec
            run.kept, refused = handover.take_or_discard(
                spec.device, spec.filesystem, spec.pg_bin_dir, spec.init, spec.database
            )
    with timed(run.seconds, "storage"):
        run.storage = run.cleanup.enter_context(_storage(run))
    # Unwound after the cluster has stopped and before the unmount: nothing of the run's user
    # outlives the run, or keeps the mount busy.
    for endpoint in run.endpoints:
        run.cleanup.callback(stop_run_user_processes, endpoint.transport)
    # A failure from here on may be the device's: it is then told in PostgreSQL's and the
    # kernel's words (unwound after PostgreSQL has stopped, before the unmount).
    run.watch = run.cleanup.enter_context(FaultWatch(run.transport, run.storage, run.spec.device, since).explaining())
    result = BenchmarkResult(run.storage, run_dir=run.run_dir, reused=run.kept is not None, reuse_refused=refused)
    result.stages = run.seconds
    return result


def _storage(run: Stages) -> AbstractContextManager[PreparedStorage]:
    if run.kept is not None:  # no mkfs, no mount: the mountpoint stays the one of the run that kept it
        return reused_storage(run.transport, run.kept)
    spec = run.spec
    return prepared_storage(run.transport, spec.device, spec.filesystem, spec.run_key, run.observer.formatting)


def start_cluster_and_load(run: Stages, result: BenchmarkResult) -> None:
    """The cluster started with the run's settings, and every database loaded (or the kept one
    checked): the barrier's first half, before any client starts."""
    run.observer.step(Step.INITIALIZING_DATABASE)
    assert run.watch is not None and run.storage is not None
    with timed(run.seconds, "cluster"):
        run.cluster = run.watch.cluster = run.cleanup.enter_context(
            _cluster(run.transport, run.spec, run.storage, run.kept)
        )
    cluster = run.cluster
    result.pg_version, result.pg_settings = cluster.version, cluster.settings
    result.pg_non_default_settings = cluster.non_default_settings
    with timed(run.seconds, "load"):
        if run.kept is None:
            run.watch.doing = run.driver.load_doing(run.spec)
            run.watch.scale = run.spec.init.scale if run.spec.sysbench is None else None  # pgbench -i's room
            result.init_command, result.init_output = _load_databases(run.server, run.spec, cluster, run.observer,
                                                                      run.run_dir)  # fmt: skip
        else:  # loaded by the run that kept it
            result.init_output = reused_database_note(run.transport, cluster, run.kept)
    result.loaded_epoch = float(run.transport.run(["date", "+%s.%N"]).stdout.strip())


def state_before_measuring(run: Stages, result: BenchmarkResult) -> None:
    """The cache and data state the run declared, a CHECKPOINT and a settle pause (state.py)."""
    assert run.cluster is not None and run.storage is not None
    storage = run.storage
    with timed(run.seconds, "state before measuring"):
        device = iostat_device(run.transport, storage.device_node, storage.mountpoint)
        result.state_before = bring_to_state(run.transport, run.cluster, run.spec.state, run.spec.databases,
                                             run.kept is not None, device, storage.own_pids)  # fmt: skip


def ready_benches(run: Stages, result: BenchmarkResult) -> None:
    """pgbench's command on each bench, its custom script in place, the statistics before."""
    started = time.monotonic()
    assert run.cluster is not None and run.watch is not None and run.storage is not None
    script_path = None
    if run.spec.run.custom_script is not None:
        script_path = f"{run.run_dir}/custom.sql"  # root's directory: the user reads it, cannot swap it
        for bench in run.benches:
            bench.endpoint.transport.write_file(script_path, run.spec.run.custom_script.encode(), mode=0o644)
    run.measuring = prepare_benches(run.spec, run.cluster, run.benches, work_dir_for(run.run_dir), script_path)
    measuring = run.measuring
    result.command = joined_commands(measuring) if len(measuring) > 1 else measuring[0].command_text
    result.pgbench_version = measuring[0].result.pgbench_version  # the driver's version (sysbench's)
    result.clients = [m.result for m in measuring if m.result.name]
    run.observer.step(Step.MEASURING)
    run.watch.doing, run.watch.scale = "measuring", None
    run.before = pg_stats_snapshot(run.transport, run.cluster, run.spec.databases)
    run.device = iostat_device(run.transport, run.storage.device_node, run.storage.mountpoint)
    result.method = facts_before(run.transport, run.cluster, run.spec.databases, run.device, run.run_dir,
                                 client_hosts(run.measuring))  # fmt: skip
    run.seconds["before pgbench"] = time.monotonic() - started


def measure(run: Stages, result: BenchmarkResult) -> OsMetrics:
    """pgbench on every bench, followed to its end, with iostat and vmstat around it; a pgbench
    that failed because of the storage fails the run saying so."""
    assert run.storage is not None and run.cluster is not None and run.before is not None and run.watch is not None
    device = run.device
    metrics_seconds = run.spec.run.duration_s + 600  # the collectors outlast pgbench, which may start late
    timeout = run.spec.run.duration_s + 120
    started = lambda: result.pgbench_started_epoch  # noqa: E731 - known once pgbench runs
    watch = CheckpointWatch(run.transport, run.server.connect, run.cluster, work_dir_for(run.run_dir), started,
                            run.observer.checkpoint, metrics_seconds, run.spec.unreachable_limit_s)  # fmt: skip
    with timed(run.seconds, "pgbench with metrics"), os_metrics(run.transport, run.run_dir, device,
                                                                  metrics_seconds) as metrics, watch:  # fmt: skip
        if len(run.measuring) == 1:
            run.processes = [measure_one(run.server, run.measuring[0], run.spec, run.observer, run.cleanup, result,
                                         run.storage, run.cluster, run.before, device, timeout)]  # fmt: skip
        else:
            record = partial(_record_several, run, result)
            run.processes = measure_several(run.measuring, run.spec, run.observer, run.cleanup, result, timeout, record)
        # Before the collectors stop: still named, so left out of the server's busiest processes.
        note_window_end(result.method, run.transport, run.run_dir, client_hosts(run.measuring))
    if result.exit_status != 0:  # the storage may be why: then the run fails saying so
        failing = next((m for m in run.measuring if m.result.exit_status not in (0, None)), run.measuring[0])
        process = run.processes[run.measuring.index(failing)]
        stderr = command_output_tail(failing.endpoint.transport, process.path("stderr"))
        run.watch.raise_if_faulty(result.command, result.exit_status, stderr)
    return metrics


def _record_several(run: Stages, result: BenchmarkResult, processes: list[Detached]) -> None:
    """The resume record of a measurement on several client hosts, in the server's run directory."""
    assert run.cluster is not None and run.before is not None
    clients = recorded_clients(run.measuring, processes)
    record = resume_record(run.spec.run_key, result, run.cluster, processes[0], False, run.before, run.device, clients)
    write_resume_record(run.transport, result.run_dir, record)


def collect(run: Stages, result: BenchmarkResult, metrics: OsMetrics) -> None:
    """What pgbench, PostgreSQL and the collectors leave behind, read into the result."""
    run.observer.step(Step.COLLECTING)
    assert run.watch is not None and run.cluster is not None and run.before is not None
    run.watch.doing = "collecting the results"
    result.os = metrics
    spec = run.spec
    with timed(run.seconds, "collect"):
        if len(run.measuring) == 1:
            bench, process = run.measuring[0], run.processes[0]
            collect_results(result, Measured(run.transport, bench.endpoint.transport, run.cluster, spec.databases,
                                             run.before, process, spec.run, spec.warmup_s),
                            run.driver.collect_outputs)  # fmt: skip
            one_client_result(result, bench, process)
        else:
            collect_server_results(result, run.transport, run.cluster, spec.databases, run.before)
            collect_several(result, run.measuring, run.processes, spec.run, spec.warmup_s)
        read_health_after_window(result, run.transport, spec)


def read_health_after_window(result: BenchmarkResult, transport: Transport, spec: BenchmarkSpec) -> None:
    """The device's SMART/NVMe health, read on the server only once the measured window has ended
    (smartctl wakes the drive and adds its own I/O); a reattached run's collect reads it here too
    (resume.py). A host that stops answering costs only this reading, which says so."""
    result.device_health = read_smart_after_run(transport, spec.device.path)


def keep(run: Stages, result: BenchmarkResult) -> None:
    """The storage and the stopped cluster left on the host for the next run of the same setup."""
    assert run.storage is not None and run.cluster is not None
    with timed(run.seconds, "keep"):
        result.kept = keep_setup(run.transport, run.storage, run.cluster, run.spec.database, run.spec.init.scale)


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
    driver = driver_for(spec.driver)
    init = driver.load_command(spec, local)
    name = f"{driver.name}-init" if len(spec.databases) == 1 else f"{driver.name}-init-{database.replace('_', '-')}"
    place = Detached(run_dir=work_dir_for(run_dir), name=name, pid=0, user=RUN_USER)
    output = run_followed(transport, server.connect, init, place, lambda text: observer.line("init", text),
                          observer.started, INIT_TIMEOUT_S, max_reconnect_s=spec.unreachable_limit_s,
                          stream=driver.progress_stream)  # fmt: skip
    return shlex.join(init), output
