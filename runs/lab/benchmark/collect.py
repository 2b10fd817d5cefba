"""What a measurement leaves behind, turned into results; and the record that lets another
process do that.

Both the worker that started pgbench (benchmark.py) and a worker that reattaches to it after
the first one died (resume.py) follow pgbench's progress the same way and collect the same
results once it has exited. The resume record, written when the measurement starts, is what
the second one cannot know otherwise: the cluster, the storage, pgbench's process, the
statistics before the measurement.
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from runs.lab.benchmark.checkpoints import read_checkpoints
from runs.lab.benchmark.method_readings import MethodReadings
from runs.lab.benchmark.metrics import PgStatsSnapshot, collectors_for, pg_stats_delta, pg_stats_snapshot
from runs.lab.benchmark.results import BenchmarkResult
from runs.lab.host.run_user import read_as_run_user, run_as_run_user
from runs.lab.options import RunOptions
from runs.lab.parse.pgbench import ProgressSample, parse_progress_line
from runs.lab.parse.pgbench_logs import merge_aggregate_intervals, parse_aggregate_log
from runs.lab.parse.pgbench_summary import parse_summary
from runs.lab.pgbench.commands import LOG_PREFIX
from runs.lab.pgbench.latency import transaction_latency_percentiles
from runs.lab.pgbench.latency_seconds import latency_seconds
from runs.lab.postgres.cluster import Cluster, server_page_sizes
from runs.lab.storage.prepare import PreparedStorage
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached

if TYPE_CHECKING:  # benchmark.py imports this module
    from runs.lab.benchmark.spec import Observer

RESUME_RECORD = "resume.json"  # in the run directory (root's), next to iostat's and vmstat's files
RESUME_RECORD_VERSION = 2  # 2: several client hosts' pgbench recorded too


@dataclass(frozen=True)
class RecordedClient:
    """One of several client hosts' pgbench, as the resume record keeps it: what measure.py's
    ClientBench is made of again, and its process."""

    name: str
    database: str
    command: list[str]
    pgbench_version: str
    rtt_ms: float | None
    process: Detached

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "database": self.database,
            "command": self.command,
            "pgbench_version": self.pgbench_version,
            "rtt_ms": self.rtt_ms,
            "pgbench": asdict(self.process),
        }


@dataclass(frozen=True)
class ResumeRecord:
    """What a process other than the one that started the measurement needs to finish it."""

    run_key: str
    cluster: Cluster  # bin_dir, base_dir and port: enough to reach it and stop it
    storage: PreparedStorage  # what releasing it takes (own_pids are not recorded)
    pgbench: Detached
    pgbench_on: str  # "server" or "client": the host pgbench runs on
    command: str
    pgbench_version: str
    pg_version: str
    pg_non_default_settings: dict[str, str]
    init_command: str
    init_output: str
    reused: bool
    reuse_refused: str
    pg_stats_before: PgStatsSnapshot
    iostat_device: str | None
    collectors: tuple[str, ...]  # the names of the collectors started in the run directory
    # With several client hosts, each one's pgbench (the first is also `pgbench`); none otherwise.
    clients: tuple[RecordedClient, ...] = ()
    # Read before the window (method_readings.py); a record written before they were has none.
    method: MethodReadings = field(default_factory=MethodReadings)
    driver: str = "pgbench"  # what measures (drivers.py): how a reattached worker follows and collects it

    def as_json(self) -> dict[str, Any]:
        storage = asdict(self.storage)
        del storage["own_pids"], storage["keep"]
        return {
            "version": RESUME_RECORD_VERSION,
            "run_key": self.run_key,
            "cluster": {"bin_dir": self.cluster.bin_dir, "base_dir": self.cluster.base_dir, "port": self.cluster.port},
            "storage": storage,
            "pgbench": asdict(self.pgbench) | {"host": self.pgbench_on},
            "command": self.command,
            "pgbench_version": self.pgbench_version,
            "pg_version": self.pg_version,
            "pg_non_default_settings": self.pg_non_default_settings,
            "init_command": self.init_command,
            "init_output": self.init_output,
            "reused": self.reused,
            "reuse_refused": self.reuse_refused,
            "pg_stats_before": asdict(self.pg_stats_before),
            "iostat_device": self.iostat_device,
            "collectors": list(self.collectors),
            "clients": [client.as_json() for client in self.clients],
            "method": self.method.as_record(),
            "driver": self.driver,
        }


def resume_record(
    run_key: str,
    result: BenchmarkResult,
    cluster: Cluster,
    process: Detached,
    on_server: bool,
    before: PgStatsSnapshot,
    iostat_device: str | None,
    clients: tuple[RecordedClient, ...] = (),
    driver: str = "pgbench",
) -> ResumeRecord:
    """The record of a measurement just started: what the result holds so far, and the rest."""
    return ResumeRecord(
        run_key=run_key,
        cluster=cluster,
        storage=result.storage,
        pgbench=process,
        pgbench_on="server" if on_server else "client",
        command=result.command,
        pgbench_version=result.pgbench_version,
        pg_version=result.pg_version,
        pg_non_default_settings=result.pg_non_default_settings,
        init_command=result.init_command,
        init_output=result.init_output,
        reused=result.reused,
        reuse_refused=result.reuse_refused,
        pg_stats_before=before,
        iostat_device=iostat_device,
        collectors=collectors_for(iostat_device),
        clients=clients,
        method=result.method,
        driver=driver,
    )


def write_resume_record(transport: Transport, run_dir: str, record: ResumeRecord) -> None:
    """Root's file in root's directory: the run's user, whose pgbench is running, cannot change
    what a reattaching worker will stop, read and unmount."""
    transport.write_file(f"{run_dir}/{RESUME_RECORD}", json.dumps(record.as_json()).encode(), mode=0o600)


def progress_reader(
    observer: "Observer",
    result: BenchmarkResult,
    stream: str = "pgbench",
    parse: Callable[[str], ProgressSample | None] = parse_progress_line,
) -> Callable[[str], None]:
    """What to do with each line of the driver's progress output, pgbench's stderr by default
    (the follower hands over clean text)."""

    def on_stderr(text: str) -> None:
        observer.line(stream, text)
        sample = parse(text)
        if sample is not None:
            observer.progress(sample)

    return on_stderr


@dataclass(frozen=True)
class Measured:
    """Where a finished measurement's outputs are."""

    server: Transport  # the cluster's host
    bench: Transport  # pgbench's host
    cluster: Cluster
    database: str | Sequence[str]  # several: one per client host, statistics summed
    before: PgStatsSnapshot
    process: Detached
    options: RunOptions
    warmup_s: int


def collect_server_results(
    result: BenchmarkResult,
    server: Transport,
    cluster: Cluster,
    database: str | Sequence[str],
    before: PgStatsSnapshot,
) -> None:
    """Once pgbench has exited: the statistics' difference, the checkpoints in the measured window
    (result.pgbench_started_epoch is known by now), and the page sizes the server runs with."""
    after = pg_stats_snapshot(server, cluster, database)
    result.pg_block_size, result.pg_wal_block_size = server_page_sizes(server, cluster)
    result.pg_stats = pg_stats_delta(before, after)
    result.checkpoints = read_checkpoints(server, cluster, result.pg_stats, result.pgbench_started_epoch)


def collect_results(
    result: BenchmarkResult,
    measured: Measured,
    outputs: "Callable[[BenchmarkResult, Measured], None] | None" = None,
) -> None:
    """Once the measurement has exited: the statistics' difference, then its outputs read by
    `outputs` (the driver's: drivers.py; pgbench's by default)."""
    collect_server_results(result, measured.server, measured.cluster, measured.database, measured.before)
    (outputs or collect_pgbench_outputs)(result, measured)


def collect_pgbench_outputs(result: BenchmarkResult, measured: Measured) -> None:
    """pgbench's output and summary, its logs."""
    bench, process = measured.bench, measured.process
    result.stdout = read_as_run_user(bench, process.path("stdout"))
    result.stderr = read_as_run_user(bench, process.path("stderr"))
    result.summary = parse_summary(result.stdout, result.stderr)
    if measured.options.log_sampling_rate is None:
        all_logs = ["sh", "-c", f'cat "$1"/{LOG_PREFIX}.*', "sh", process.run_dir]
        logs = run_as_run_user(bench, all_logs, check=False).stdout
        result.aggregate = merge_aggregate_intervals(parse_aggregate_log(logs))
    else:
        result.latency = transaction_latency_percentiles(
            bench, process.run_dir, process.path("started"), measured.warmup_s, measured.options.log_sampling_rate
        )
        result.latency_seconds = latency_seconds(
            bench, process.run_dir, process.path("started"), measured.options.latency_limit_ms
        )
