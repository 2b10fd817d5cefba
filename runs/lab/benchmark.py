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
import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

from runs.lab.benchmark_spec import RUNS_ROOT as RUNS_ROOT  # the names below are re-exported: callers
from runs.lab.benchmark_spec import WORK_SUBDIR as WORK_SUBDIR  # know the lab layer's run by this module
from runs.lab.benchmark_spec import Bench, Endpoint, Observer, SilentObserver
from runs.lab.benchmark_spec import BenchmarkSpec as BenchmarkSpec
from runs.lab.benchmark_spec import ClientSpec as ClientSpec
from runs.lab.benchmark_spec import Step as Step
from runs.lab.benchmark_spec import run_dir_for as run_dir_for
from runs.lab.benchmark_spec import work_dir_for as work_dir_for
from runs.lab.clients import collect_several, joined_commands
from runs.lab.collect import BenchmarkResult as BenchmarkResult  # re-exported: the service stores these
from runs.lab.collect import Measured, collect_results, collect_server_results
from runs.lab.diagnose import FaultWatch, command_output_tail
from runs.lab.follow import run_followed
from runs.lab.kept import Handover, handed_over, keep_setup, reused_database_note, reused_storage
from runs.lab.kept import KeptSetup as KeptSetup  # re-exported: the service stores and hands these back
from runs.lab.kept import discard_kept_setup as discard_kept_setup
from runs.lab.measure import measure_one, measure_several, one_client_result, prepare_benches
from runs.lab.metrics import iostat_device, os_metrics, pg_stats_snapshot
from runs.lab.pgbench import Connection, Detached, create_database_command, init_command
from runs.lab.postgres import BENCH_ROLE, SUPERUSER, Cluster, psql, running_cluster, throwaway_cluster
from runs.lab.run_user import RUN_USER, ensure_run_user, run_as_run_user, stop_run_user_processes
from runs.lab.storage import PreparedStorage, kernel_log_cursor, prepared_storage
from runs.lab.transport import Transport, clean_text

log = logging.getLogger(__name__)
INIT_TIMEOUT_S = 6 * 3600  # `pgbench -i` of a large scale on a slow disk takes hours


@contextmanager
def _timed(stages: dict[str, float], name: str) -> Iterator[None]:
    """Add the seconds the block takes to stages[name]: where a run's wall time goes."""
    start = time.monotonic()
    try:
        yield
    finally:
        stages[name] = stages.get(name, 0.0) + time.monotonic() - start


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
    stages: dict[str, float] = {}
    with ExitStack() as cleanup:
        cleaning_up_from = [0.0]  # the cleanups unwind from here to the first callback's end
        cleanup.callback(lambda: stages.update(cleanup=time.monotonic() - cleaning_up_from[0]))
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
            return _run_stages(server, benches, spec, observer, cleanup, run_dir, measure_timeout_s, handover, keep,
                               stages)  # fmt: skip
        finally:
            # Runs before the stages' own cleanups unwind (unmount, stop PostgreSQL).
            observer.step(Step.CLEANING_UP)
            cleaning_up_from[0] = time.monotonic()


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
    stages: dict[str, float],
) -> BenchmarkResult:
    transport = server.transport
    benches = client_benches or [Bench(None, server, None)]
    observer.step(Step.PREPARING_STORAGE)
    with _timed(stages, "hosts"):
        since = kernel_log_cursor(transport)  # before the run touches the device: its faults are logged after this
        endpoints = list({id(e): e for e in [server, *(bench.endpoint for bench in benches)]}.values())
        _prepare_hosts(endpoints, run_dir)
    work_dir = work_dir_for(run_dir)
    kept, refused = None, ""
    if handover is not None:
        with _timed(stages, "kept setup checked"):
            kept, refused = handover.take_or_discard(
                spec.device, spec.filesystem, spec.pg_bin_dir, spec.init, spec.database
            )
    with _timed(stages, "storage"):
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
    result.stages = stages

    observer.step(Step.INITIALIZING_DATABASE)
    with _timed(stages, "cluster"):
        cluster = watch.cluster = cleanup.enter_context(_cluster(transport, spec, storage, kept))
    result.pg_version, result.pg_settings = cluster.version, cluster.settings
    result.pg_non_default_settings = cluster.non_default_settings
    with _timed(stages, "load"):
        if kept is None:
            watch.doing, watch.scale = f"loading scale {spec.init.scale} with pgbench -i", spec.init.scale
            result.init_command, result.init_output = _load_databases(server, spec, cluster, observer, run_dir)
        else:  # loaded by the run that kept it
            result.init_output = reused_database_note(transport, cluster, kept)
    # The barrier's first half: every database is loaded before any client starts.
    result.loaded_epoch = float(transport.run(["date", "+%s.%N"]).stdout.strip())

    script_path = None
    before_pgbench = time.monotonic()
    if spec.run.custom_script is not None:
        script_path = f"{run_dir}/custom.sql"  # root's directory: the user reads it, cannot swap it
        for bench in benches:
            bench.endpoint.transport.write_file(script_path, spec.run.custom_script.encode(), mode=0o644)
    measuring = prepare_benches(spec, cluster, benches, work_dir, script_path)
    result.command = joined_commands(measuring) if len(measuring) > 1 else measuring[0].command_text
    result.pgbench_version = measuring[0].result.pgbench_version
    result.clients = [m.result for m in measuring if m.result.name]

    observer.step(Step.MEASURING)
    watch.doing, watch.scale = "measuring", None
    before = pg_stats_snapshot(transport, cluster, spec.databases)
    device = iostat_device(transport, storage.device_node, storage.mountpoint)
    stages["before pgbench"] = time.monotonic() - before_pgbench
    # A run with -t has no known length; its metrics stop after an hour at most.
    metrics_seconds = (spec.run.duration_s or 3600) + 600
    timeout = measure_timeout_s or (spec.run.duration_s or 3600) + 120
    with _timed(stages, "pgbench with metrics"), os_metrics(transport, run_dir, device, metrics_seconds) as metrics:
        if len(measuring) == 1:
            process = measure_one(server, measuring[0], spec, observer, cleanup, result, storage, cluster, before,
                                   device, timeout)  # fmt: skip
        else:
            processes = measure_several(measuring, spec, observer, cleanup, result, timeout)

    if result.exit_status != 0:  # the storage may be why: then the run fails saying so
        failing = next((m for m in measuring if m.result.exit_status not in (0, None)), measuring[0])
        failing_process = process if len(measuring) == 1 else processes[measuring.index(failing)]
        stderr = command_output_tail(failing.endpoint.transport, failing_process.path("stderr"))
        watch.raise_if_faulty(result.command, result.exit_status, stderr)

    observer.step(Step.COLLECTING)
    watch.doing = "collecting the results"
    result.os = metrics
    with _timed(stages, "collect"):
        if len(measuring) == 1:
            pgbench_host = measuring[0].endpoint.transport
            measured = Measured(transport, pgbench_host, cluster, spec.databases, before, process, spec.run,
                                spec.warmup_s)  # fmt: skip
            collect_results(result, measured)
            one_client_result(result, measuring[0], process)
        else:
            collect_server_results(result, transport, cluster, spec.databases, before)
            collect_several(result, measuring, processes, spec.run, spec.warmup_s)
    if keep and result.exit_status == 0:
        with _timed(stages, "keep"):
            result.kept = keep_setup(transport, storage, cluster, spec.database, spec.init.scale)
    return result


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
