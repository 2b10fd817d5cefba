"""The measurement itself: each pgbench's command line, then pgbench on the server or on one
client host (followed, resumable by another worker: resume.py), or on several client hosts at
once (clients.py), with what each measured."""

import shlex
from collections.abc import Callable
from contextlib import ExitStack

from runs.lab.benchmark.clients import (
    ClientBench,
    ClientFailed,
    ClientResult,
    follow_together,
    measure_rtt,
    start_skew_ms,
    start_together,
    started_epoch,
)
from runs.lab.benchmark.collect import RecordedClient, progress_reader, resume_record, write_resume_record
from runs.lab.benchmark.drivers import driver_for
from runs.lab.benchmark.metrics import PgStatsSnapshot
from runs.lab.benchmark.results import BenchmarkResult
from runs.lab.benchmark.spec import Bench, BenchmarkSpec, Endpoint, Observer, work_dir_for
from runs.lab.host.run_user import RUN_USER
from runs.lab.pgbench.commands import Connection
from runs.lab.pgbench.follow import Follower
from runs.lab.postgres.cluster import BENCH_ROLE, Cluster
from runs.lab.storage.prepare import PreparedStorage
from runs.lab.transport.process import Detached, cancel, start_detached, wait_for_exit
from runs.lab.transport.waiting import wait_until


def prepare_benches(
    spec: BenchmarkSpec, cluster: Cluster, benches: list[Bench], work_dir: str, script_path: str | None
) -> list[ClientBench]:
    """Each pgbench's command line, version and (from a client host) round trip to the server."""
    driver = driver_for(spec.driver)
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
        command = driver.measure_command(spec, bin_dir, connection, work_dir, script_path)
        transport = bench.endpoint.transport
        result = ClientResult(name=bench.name or "", database=connection.database, command=shlex.join(command),
                              pgbench_version=driver.version(transport, bin_dir))  # fmt: skip
        if bench.client is not None:
            result.rtt_ms = measure_rtt(transport, bench.client.server_address, cluster.port)
        measuring.append(ClientBench(bench.name or "", bench.endpoint, command, result))
    return measuring


def measure_one(
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
    driver = driver_for(spec.driver)
    process = start_detached(bench.endpoint.transport, bench.command, work_dir, driver.name, user=RUN_USER)
    # Known at once: the checkpoints logged from now on are told in seconds since then (checkpoints.py).
    result.pgbench_started_epoch = wait_until(lambda: started_epoch(bench.endpoint.transport, process), 5, 0.05)
    if on_server:
        storage.own_pids.append(process.pid)
    # On a failure below, pgbench must not go on loading the host (a no-op once it has exited).
    cleanup.callback(cancel, bench.endpoint.transport, process, 2.0)
    observer.started(process, on=None if on_server else bench.name)
    # If this worker dies now, another one finishes the run from this record (resume.py).
    resume = resume_record(spec.run_key, result, cluster, process, on_server, before, device, driver=driver.name)
    write_resume_record(server.transport, result.run_dir, resume)
    reader = progress_reader(observer, result, driver.name, driver.progress)
    follower = Follower(bench.endpoint.connect, process, driver.progress_stream, reader,
                        max_reconnect_s=spec.unreachable_limit_s, on_offset=observer.followed)  # fmt: skip
    follower.follow(timeout)
    result.exit_status = wait_for_exit(bench.endpoint.transport, process, 60)  # it has exited: the status is on its way
    result.pgbench_started_epoch = result.pgbench_started_epoch or started_epoch(bench.endpoint.transport, process)
    return process


def one_client_result(result: BenchmarkResult, bench: ClientBench, process: Detached) -> None:
    """The one client host's share is the whole run."""
    if not bench.name:
        return
    client = bench.result
    client.exit_status, client.summary = result.exit_status, result.summary
    client.latency, client.started_epoch = result.latency, result.pgbench_started_epoch


def measure_several(
    measuring: list[ClientBench],
    spec: BenchmarkSpec,
    observer: Observer,
    cleanup: ExitStack,
    result: BenchmarkResult,
    timeout: float,
    record: Callable[[list[Detached]], None],
) -> list[Detached]:
    """pgbench on every client host at once, behind the barrier, followed together; resumable by
    another worker if this one dies (`record` writes what it needs, resume.py). A client that
    fails stops the others; its name and status go into the result (the run fails)."""
    processes = start_together(measuring, work_dir_for(result.run_dir))
    for bench, process in zip(measuring, processes, strict=True):
        cleanup.callback(cancel, bench.endpoint.transport, process, 2.0)
        observer.started(process, on=bench.name)
    note_starts(result, measuring, processes)
    record(processes)  # if this worker dies now, another one finishes the run from this record
    follow_several(measuring, processes, spec, observer, result, timeout)
    return processes


def recorded_clients(measuring: list[ClientBench], processes: list[Detached]) -> tuple[RecordedClient, ...]:
    """Several client hosts' pgbench as the resume record keeps them."""
    return tuple(
        RecordedClient(m.name, m.result.database, m.command, m.result.pgbench_version, m.result.rtt_ms, process)
        for m, process in zip(measuring, processes, strict=True)
    )


def note_starts(result: BenchmarkResult, measuring: list[ClientBench], processes: list[Detached]) -> None:
    """When each client's pgbench started (its host's clock), how far apart, and the first."""
    result.start_skew_ms = start_skew_ms(measuring, processes)
    epochs = [m.result.started_epoch for m in measuring if m.result.started_epoch is not None]
    result.pgbench_started_epoch = min(epochs, default=None)


def follow_several(
    measuring: list[ClientBench],
    processes: list[Detached],
    spec: BenchmarkSpec,
    observer: Observer,
    result: BenchmarkResult,
    timeout: float,
) -> None:
    """Every client's pgbench followed to its end (from its first line); the exit status, or
    which client failed and how."""
    try:
        follow_together(measuring, processes, observer, observer.progress, timeout, spec.unreachable_limit_s)
        result.exit_status = 0
    except ClientFailed as failed:
        result.failed_client = failed.client
        statuses = [m.result.exit_status for m in measuring]
        result.exit_status = next((status for status in statuses if status not in (0, None)), -1)
        result.failure = str(failed)
