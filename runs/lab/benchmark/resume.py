"""Finish a measurement that another process started: the worker that ran it died mid-run.

pgbench runs detached on the host, and iostat/vmstat beside it; they go on when the worker
that started them is killed. A worker that reattaches reads the run's resume record (written
by benchmark.py when the measurement started, collect.py), follows pgbench's output to its
end (several client hosts: each one's, together), collects the results exactly as the first
worker would have, and cleans up: the cluster stopped, the run user's processes stopped, the
storage released. A reattached run never keeps its setup for a next run.

The record lies in the run's directory on the host, and what it names is stopped, unmounted
and removed as root: every path in it must be the run's own (named after its run key), or
those of the kept setup the run took over. Anything else is refused, as kept.py refuses a
KeptSetup that is not benchlab's.
"""

import json
import posixpath
import re
import shlex
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from runs.lab.benchmark.abandon import stop_collector
from runs.lab.benchmark.checkpoints import CheckpointWatch
from runs.lab.benchmark.clients import ClientBench, client_hosts, collect_several, started_epoch
from runs.lab.benchmark.collect import (
    RESUME_RECORD,
    RESUME_RECORD_VERSION,
    BenchmarkResult,
    Measured,
    RecordedClient,
    ResumeRecord,
    collect_results,
    collect_server_results,
    progress_reader,
)
from runs.lab.benchmark.drivers import driver_for
from runs.lab.benchmark.measure import follow_several, note_starts
from runs.lab.benchmark.method_readings import MethodReadings, method_readings_from_record, note_window_end
from runs.lab.benchmark.metrics import OsMetrics, PgStatsSnapshot, collectors_for, read_os_metrics
from runs.lab.benchmark.results import ClientResult
from runs.lab.benchmark.run import (
    BenchmarkSpec,
    ClientSpec,
    Endpoint,
    Observer,
    SilentObserver,
    Step,
    run_dir_for,
    work_dir_for,
)
from runs.lab.benchmark.stages import read_health_after_window
from runs.lab.benchmark.warmup import WARMUP_NAME
from runs.lab.errors import LabError
from runs.lab.host.run_user import RUN_USER, run_as_run_user, stop_run_user_processes
from runs.lab.pgbench.follow import Follower
from runs.lab.postgres.cluster import PORT_RANGE, Cluster, discard_cluster
from runs.lab.storage.checks import resolved_device_directory
from runs.lab.storage.kept import KeptSetup
from runs.lab.storage.prepare import PreparedStorage, directory_for, mountpoint_for, release_storage
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached, cancel, exit_status, is_running, wait_for_exit

_KEYS = {
    "version", "run_key", "cluster", "storage", "pgbench", "command", "pgbench_version", "pg_version",
    "pg_non_default_settings", "init_command", "init_output", "reused", "reuse_refused", "pg_stats_before",
    "iostat_device", "collectors", "clients",
}  # fmt: skip
_TEXTS = ("run_key", "command", "pgbench_version", "pg_version", "init_command", "init_output", "reuse_refused")
_STORAGE_KEYS = {"mountpoint", "fstype", "device_node", "mount_options", "mkfs_command", "directory"}
_PROCESS_KEYS = {"run_dir", "name", "pid", "user"}
_KERNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # loop3, dm-0, nvme0n1: as iostat names them


def resume_benchmark(
    transport: Transport,
    connect: Callable[[], Transport],
    spec: BenchmarkSpec,
    observer: Observer | None = None,
    clients: Sequence[Endpoint] = (),
    offset: int = 0,
    taken_over: KeptSetup | None = None,
) -> BenchmarkResult:
    """Follow the run's pgbench from byte `offset` of its stderr to its end, collect, clean up.

    `taken_over` is the kept setup the run started from, if any (its storage is then mounted
    under the earlier run's name). LabError if the record is missing or refused, or if pgbench's
    files are gone: then nothing on the host was touched, and the caller cleans up by run key
    (abandon.py)."""
    observer = observer or SilentObserver()
    if len(spec.clients) != len(clients):
        raise ValueError("each client host needs both its specification and its connection")
    server = Endpoint(transport, connect)
    with ExitStack() as cleanup:
        try:
            return _resume(server, list(clients) or [server], spec, observer, cleanup, offset, taken_over)
        finally:
            observer.step(Step.CLEANING_UP)


def _resume(
    server: Endpoint,
    benches: list[Endpoint],
    spec: BenchmarkSpec,
    observer: Observer,
    cleanup: ExitStack,
    offset: int,
    taken_over: KeptSetup | None,
) -> BenchmarkResult:
    """`benches`: where pgbench runs, the client hosts in the spec's order or the server."""
    transport = server.transport
    record = read_resume_record(transport, spec, taken_over)
    run_dir = run_dir_for(spec.run_key)
    processes = [client.process for client in record.clients] or [record.pgbench]
    for bench, process in zip(benches, processes, strict=True):
        _check_still_there(bench.transport, process)
    # Unwound in the order the stages that started them would have: pgbench, the collectors,
    # the cluster, the run user's processes, and the storage last.
    cleanup.callback(release_storage, transport, record.storage)
    for endpoint in {id(e): e for e in [server, *benches]}.values():
        cleanup.callback(stop_run_user_processes, endpoint.transport)
    cleanup.callback(discard_cluster, transport, record.cluster)  # a reattached run keeps nothing
    cleanup.callback(stop_collectors, transport, run_dir, record.collectors)
    names: list[str | None] = [client.name for client in spec.clients] or [None]
    for bench, process, name in zip(benches, processes, names, strict=True):
        cleanup.callback(cancel, bench.transport, process, 2.0)
        observer.started(process, on=name)
    result = BenchmarkResult(
        storage=record.storage,
        pg_version=record.pg_version,
        pg_non_default_settings=record.pg_non_default_settings,
        init_command=record.init_command,
        init_output=record.init_output,
        command=record.command,
        pgbench_version=record.pgbench_version,
        run_dir=run_dir,
        reused=record.reused,
        reuse_refused=record.reuse_refused,
        method=record.method,
    )
    timeout = spec.run.duration_s + 120  # from the start, which was earlier still
    # The server log from its start again: the checkpoints already told are told again, and kept once.
    watch = CheckpointWatch(transport, server.connect, record.cluster, work_dir_for(run_dir),
                            lambda: result.pgbench_started_epoch, observer.checkpoint, spec.run.duration_s + 600,
                            spec.unreachable_limit_s)  # fmt: skip
    if record.clients:
        return _resume_several(server, benches, spec, observer, record, result, timeout, watch)
    bench, process = benches[0], processes[0]
    result.pgbench_started_epoch = started_epoch(bench.transport, process)
    driver = driver_for(spec.driver)
    reader = progress_reader(observer, result, driver.name, driver.progress)
    limit = spec.unreachable_limit_s
    follower = Follower(bench.connect, process, driver.progress_stream, reader, offset, limit,
                        on_offset=observer.followed)  # fmt: skip
    with watch:
        follower.follow(timeout)
    result.exit_status = wait_for_exit(bench.transport, process, 60)
    clients = [(client.name, bench.transport) for client in spec.clients]  # one client host, or the server
    note_window_end(result.method, transport, run_dir, clients)
    result.os = _os_metrics(transport, run_dir, record)

    observer.step(Step.COLLECTING)
    before = record.pg_stats_before
    measured = Measured(transport, bench.transport, record.cluster, spec.database, before, process, spec.run,
                        spec.warmup_s)  # fmt: skip
    collect_results(result, measured, driver.collect_outputs)
    read_health_after_window(result, transport, spec)
    observer.collected(result)  # before the cleanups unwind, as benchmark.py does
    return result


def _resume_several(
    server: Endpoint,
    benches: list[Endpoint],
    spec: BenchmarkSpec,
    observer: Observer,
    record: ResumeRecord,
    result: BenchmarkResult,
    timeout: float,
    watch: CheckpointWatch,
) -> BenchmarkResult:
    """Several client hosts' pgbench followed again together, each from its first line (their
    seconds are stored again, each once), then collected and combined as measure.py does."""
    measuring = [
        ClientBench(c.name, bench, c.command, ClientResult(name=c.name, database=c.database, command=shlex.join(
            c.command), pgbench_version=c.pgbench_version, rtt_ms=c.rtt_ms))
        for c, bench in zip(record.clients, benches, strict=True)
    ]  # fmt: skip
    processes = [client.process for client in record.clients]
    result.clients = [bench.result for bench in measuring]
    note_starts(result, measuring, processes)
    with watch:
        follow_several(measuring, processes, spec, observer, result, timeout)
    transport, run_dir = server.transport, run_dir_for(spec.run_key)
    note_window_end(result.method, transport, run_dir, client_hosts(measuring))
    result.os = _os_metrics(transport, run_dir, record)

    observer.step(Step.COLLECTING)
    collect_server_results(result, transport, record.cluster, spec.databases, record.pg_stats_before)
    collect_several(result, measuring, processes, spec.run, spec.warmup_s)
    read_health_after_window(result, server.transport, spec)
    observer.collected(result)  # before the cleanups unwind, as benchmark.py does
    return result


def _os_metrics(transport: Transport, run_dir: str, record: ResumeRecord) -> OsMetrics:
    """iostat's and vmstat's output once they are stopped (they were started for longer)."""
    stop_collectors(transport, run_dir, record.collectors)
    return read_os_metrics(transport, run_dir, record.iostat_device)


def read_resume_record(transport: Transport, spec: BenchmarkSpec, taken_over: KeptSetup | None = None) -> ResumeRecord:
    """The run's record from its directory on the host, checked; LabError saying what is wrong."""
    run_dir = run_dir_for(spec.run_key)
    if transport.run(["test", "-d", run_dir], check=False).exit_status != 0:
        raise LabError(f"the run's files are gone from {transport.label}: {run_dir} is not there")
    path = f"{run_dir}/{RESUME_RECORD}"
    found = transport.run(["cat", "--", path], check=False)
    if found.exit_status != 0:
        warmup_started(transport, spec)
        raise LabError(f"the run's record of its measurement is gone from {transport.label}: {path} is not there")
    try:
        record = parse_resume_record(json.loads(found.stdout), spec, taken_over)
    except ValueError as exc:  # json's errors are ValueErrors too
        raise LabError(f"the run's record {path} on {transport.label} is refused: {exc}") from exc
    directory = record.storage.directory
    if directory is not None and (taken_over is None or directory != taken_over.directory):
        own = directory_for(spec.run_key, resolved_device_directory(transport, spec.device))
        if directory != own:
            raise LabError(f"the run's record {path} on {transport.label} names {directory}, not the run's {own}")
    return record


def warmup_started(transport: Transport, spec: BenchmarkSpec) -> None:
    """LabError if the run has no record because its worker died in the separate warm-up run: the
    measurement never started, and is not started by another worker (the warm-up it followed is
    the seed's first half; half a warm-up, or a second one, would be another experiment)."""
    started = f"{work_dir_for(run_dir_for(spec.run_key))}/{WARMUP_NAME}.started"
    if spec.warmup_run_s and run_as_run_user(transport, ["test", "-e", started], check=False).exit_status == 0:
        raise LabError(
            f"the measurement never started (its worker died in the warm-up run on {transport.label}): nothing was "
            "measured, and a warm-up cut short is not run again; queue the run again"
        )


def parse_resume_record(data: object, spec: BenchmarkSpec, taken_over: KeptSetup | None = None) -> ResumeRecord:
    """The record of this run (spec) as the host holds it; ValueError saying what is wrong."""
    fields = _fields(data, "the record", _KEYS, optional={"method", "driver"})
    driver = fields.get("driver", "pgbench")  # a record written before sysbench: pgbench's
    if driver != spec.driver:
        raise ValueError(f"the record's driver {driver!r} is not the run's {spec.driver}")
    if fields["version"] != RESUME_RECORD_VERSION:
        raise ValueError(f"version {fields['version']!r} is not {RESUME_RECORD_VERSION}")
    for name in _TEXTS:
        if not isinstance(fields[name], str):
            raise ValueError(f"{name} is not a string")
    if fields["run_key"] != spec.run_key:
        raise ValueError(f"it is the record of {fields['run_key']!r}, not of {spec.run_key!r}")
    if not isinstance(fields["reused"], bool):
        raise ValueError("reused is not true or false")
    settings = fields["pg_non_default_settings"]
    if not isinstance(settings, dict) or not all(isinstance(v, str) for v in settings.values()):
        raise ValueError("pg_non_default_settings is not an object of strings")
    cluster = _cluster(fields["cluster"], spec)
    iostat_device, collectors = _collectors(fields["iostat_device"], fields["collectors"])
    return ResumeRecord(
        run_key=spec.run_key,
        cluster=cluster,
        storage=_storage(fields["storage"], cluster, spec, taken_over),
        pgbench=_pgbench(fields["pgbench"], spec),
        pgbench_on="client" if spec.clients else "server",
        command=fields["command"],
        pgbench_version=fields["pgbench_version"],
        pg_version=fields["pg_version"],
        pg_non_default_settings=settings,
        init_command=fields["init_command"],
        init_output=fields["init_output"],
        reused=fields["reused"],
        reuse_refused=fields["reuse_refused"],
        pg_stats_before=_snapshot(fields["pg_stats_before"]),
        iostat_device=iostat_device,
        collectors=collectors,
        clients=_clients(fields["clients"], spec),
        method=_method_readings(fields.get("method")),
        driver=spec.driver,
    )


def _fields(
    data: object, what: str, keys: set[str], optional: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    """`optional`: keys a record written by an earlier benchlab lacks."""
    if not isinstance(data, dict):
        raise ValueError(f"{what} is {type(data).__name__}, not an object")
    if missing := keys - set(data):
        raise ValueError(f"{what} lacks {', '.join(sorted(missing))}")
    if unknown := set(data) - keys - optional:
        raise ValueError(f"{what} has unknown keys {sorted(map(str, unknown))}")
    return data


def _cluster(data: object, spec: BenchmarkSpec) -> Cluster:
    fields = _fields(data, "the cluster", {"bin_dir", "base_dir", "port"})
    if fields["bin_dir"] != spec.pg_bin_dir:
        raise ValueError(f"the cluster's binaries {fields['bin_dir']!r} are not the run's {spec.pg_bin_dir}")
    port = fields["port"]
    if isinstance(port, bool) or not isinstance(port, int) or port not in PORT_RANGE:
        raise ValueError(f"the cluster's port {port!r} is not one benchlab gives")
    if not isinstance(fields["base_dir"], str):
        raise ValueError("the cluster's directory is not a string")
    return Cluster(bin_dir=spec.pg_bin_dir, base_dir=fields["base_dir"], port=port)


def _storage(data: object, cluster: Cluster, spec: BenchmarkSpec, taken_over: KeptSetup | None) -> PreparedStorage:
    fields = _fields(data, "the storage", _STORAGE_KEYS)
    try:  # the checks of a kept setup: benchlab's mountpoint, the cluster right below it, a device node...
        KeptSetup(**fields, base_dir=cluster.base_dir, pg_bin_dir=cluster.bin_dir, database=spec.database, scale=1)
    except ValueError as exc:
        raise ValueError(f"the storage: {str(exc).removeprefix('not a kept setup: ')}") from None
    storage = PreparedStorage(**fields)
    if storage.fstype != spec.filesystem.fstype:
        raise ValueError(f"the storage is {storage.fstype}, the run's is {spec.filesystem.fstype}")
    if taken_over is not None and storage.mountpoint == taken_over.mountpoint:
        if (storage.directory, cluster.base_dir) != (taken_over.directory, taken_over.base_dir):
            raise ValueError(f"the storage at {storage.mountpoint} is not the kept setup the run took over")
        return storage
    own = mountpoint_for(spec.run_key, spec.device)
    if storage.mountpoint != own:
        raise ValueError(f"the mountpoint {storage.mountpoint} is not the run's own {own}")
    if cluster.base_dir != f"{own}/postgres":
        raise ValueError(f"the cluster's directory {cluster.base_dir} is not the run's {own}/postgres")
    # Where exactly is checked on the host (read_resume_record): directory_for names it so.
    if storage.directory is not None and posixpath.basename(storage.directory) != posixpath.basename(own):
        raise ValueError(f"the directory {storage.directory} is not the run's own")
    return storage


def _pgbench(data: object, spec: BenchmarkSpec) -> Detached:
    fields = _fields(data, "pgbench's process", _PROCESS_KEYS | {"host"})
    host = "client" if spec.clients else "server"
    if fields["host"] != host:
        raise ValueError(f"pgbench ran on the {fields['host']!r}, the run's runs on the {host}")
    return _process(fields, spec)


def _process(fields: dict[str, Any], spec: BenchmarkSpec) -> Detached:
    work_dir = work_dir_for(run_dir_for(spec.run_key))
    if fields["run_dir"] != work_dir:
        raise ValueError(f"pgbench's directory {fields['run_dir']!r} is not the run's {work_dir}")
    name = spec.driver  # the measuring process is named after its driver (measure.py)
    if fields["name"] != name or fields["user"] != RUN_USER:
        raise ValueError(f"the process is {fields['name']!r} of {fields['user']!r}, not {name} of {RUN_USER}")
    pid = fields["pid"]
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 2:
        raise ValueError(f"{name}'s PID {pid!r} is not a process's")
    return Detached(run_dir=work_dir, name=name, pid=pid, user=RUN_USER)


def _clients(data: object, spec: BenchmarkSpec) -> tuple[RecordedClient, ...]:
    """Each client host's pgbench in a run with several, in the spec's order; none otherwise."""
    if not isinstance(data, list):
        raise ValueError("clients is not a list")
    expected = spec.clients if len(spec.clients) > 1 else ()
    if len(data) != len(expected):
        raise ValueError(f"the record names {len(data)} client hosts' pgbench, the run has {len(expected)}")
    return tuple(_client(item, spec, client) for item, client in zip(data, expected, strict=True))


def _client(data: object, spec: BenchmarkSpec, client: ClientSpec) -> RecordedClient:
    keys = {"name", "database", "command", "pgbench_version", "rtt_ms", "pgbench"}
    fields = _fields(data, "a client host's pgbench", keys)
    if (fields["name"], fields["database"]) != (client.name, client.database):
        raise ValueError(f"the client {fields['name']!r} on {fields['database']!r} is not the run's {client.name}")
    command, rtt = fields["command"], fields["rtt_ms"]
    if not isinstance(command, list) or not command or not all(isinstance(arg, str) for arg in command):
        raise ValueError(f"{client.name}'s command is not a list of strings")
    if not isinstance(fields["pgbench_version"], str):
        raise ValueError(f"{client.name}'s pgbench_version is not a string")
    if rtt is not None and (isinstance(rtt, bool) or not isinstance(rtt, int | float)):
        raise ValueError(f"{client.name}'s rtt_ms {rtt!r} is not a number")
    process = _process(_fields(fields["pgbench"], f"{client.name}'s pgbench process", _PROCESS_KEYS), spec)
    return RecordedClient(client.name, client.database, command, fields["pgbench_version"], rtt, process)


def _method_readings(data: object) -> MethodReadings:
    """The facts read before the window; unknown (not refused) when the record lacks them (an
    earlier benchlab wrote it) or they are not what as_record writes: they name nothing that is
    stopped or removed, and a fact is worth less than finishing the measurement."""
    try:
        return method_readings_from_record(data) if data is not None else MethodReadings()
    except ValueError:
        return MethodReadings()


def _snapshot(data: object) -> PgStatsSnapshot:
    fields = _fields(data, "the statistics before", {"database", "bgwriter"})
    if not isinstance(fields["database"], dict) or not isinstance(fields["bgwriter"], dict):
        raise ValueError("the statistics before are not objects")
    return PgStatsSnapshot(database=fields["database"], bgwriter=fields["bgwriter"])


def _collectors(device: object, names: object) -> tuple[str | None, tuple[str, ...]]:
    if device is not None and not (isinstance(device, str) and _KERNEL_NAME.fullmatch(device)):
        raise ValueError(f"{device!r} is not a device's kernel name")
    expected = collectors_for(device)
    if not isinstance(names, list) or tuple(names) != expected:
        raise ValueError(f"the collectors {names!r} are not {list(expected)}")
    return device, expected


def _check_still_there(transport: Transport, process: Detached) -> None:
    """pgbench still runs, or has left its exit status; and its output is there to read."""
    stderr = process.path("stderr")
    if run_as_run_user(transport, ["test", "-f", stderr], check=False).exit_status != 0:
        raise LabError(f"pgbench's output is gone from {transport.label}: {stderr} is not there")
    # In this order: once the wrapper has gone, its exit status is written, or never will be.
    if not is_running(transport, process) and exit_status(transport, process) is None:
        raise LabError(f"pgbench (PID {process.pid}) is gone from {transport.label} and left no exit status")


def stop_collectors(transport: Transport, run_dir: str, names: tuple[str, ...]) -> None:
    for name in names:
        stop_collector(transport, run_dir, name)
