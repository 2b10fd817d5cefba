"""What a benchmark brought back: the run's result and each client host's share of it. Plain
values, shared by the stages that fill them (collect, clients, measure) and the service that
stores them."""

from dataclasses import dataclass, field
from typing import Any

from runs.lab.benchmark.checkpoints import Checkpoints
from runs.lab.benchmark.method_readings import MethodReadings
from runs.lab.benchmark.metrics import OsMetrics, PgStatsDelta
from runs.lab.parse.pgbench_logs import AggregateInterval
from runs.lab.parse.pgbench_summary import PgbenchSummary
from runs.lab.parse.smart import SmartHealth
from runs.lab.parse.sysbench import SysbenchSummary
from runs.lab.pgbench.latency import LatencyHistogram, LatencyPercentiles
from runs.lab.pgbench.latency_seconds import LatencySecond
from runs.lab.storage.kept import KeptSetup
from runs.lab.storage.prepare import PreparedStorage


@dataclass(frozen=True)
class SysbenchReport:
    """sysbench's final summary (None: it printed none) and its latency histogram: (ms, count)."""

    summary: SysbenchSummary | None
    histogram: list[tuple[float, int]]


@dataclass
class ClientResult:
    """One client host's share of a run."""

    name: str
    database: str
    command: str = ""
    pgbench_version: str = ""
    rtt_ms: float | None = None  # median TCP connect time to the server's port
    started_epoch: float | None = None  # when its pgbench started, by the client's clock
    exit_status: int | None = None
    stdout: str = ""
    stderr: str = ""
    summary: PgbenchSummary | None = None
    latency: LatencyPercentiles | None = None
    histogram: LatencyHistogram | None = None  # for the percentiles over all clients together


@dataclass
class WarmupRun:
    """What the separate warm-up run did (warmup.py): kept beside the results, never in them."""

    command: str
    clients: int
    duration_s: int
    exit_status: int | None = None
    started_epoch: float | None = None  # by its host's clock
    tps: float | None = None  # pgbench's own summary
    latency_avg_ms: float | None = None


@dataclass
class BenchmarkResult:
    storage: PreparedStorage
    pg_version: str = ""
    pg_block_size: int | None = None  # bytes, as the running server says (collect_results)
    pg_wal_block_size: int | None = None
    pg_settings: list[dict[str, str | None]] = field(default_factory=list)
    pg_non_default_settings: dict[str, str] = field(default_factory=dict)
    init_command: str = ""
    init_output: str = ""
    command: str = ""
    pgbench_version: str = ""  # of the binary that ran, on the host it ran on
    exit_status: int | None = None
    stdout: str = ""
    stderr: str = ""
    summary: PgbenchSummary | None = None
    sysbench: SysbenchReport | None = None  # a sysbench run's summary and histogram (drivers.py)
    aggregate: list[AggregateInterval] = field(default_factory=list)
    latency: LatencyPercentiles | None = None  # with per-transaction logs only
    # Each second's percentiles, skipped and late (per-transaction logs, pgbench on one host).
    latency_seconds: list[LatencySecond] = field(default_factory=list)
    os: OsMetrics = field(default_factory=OsMetrics)
    pg_stats: PgStatsDelta | None = None
    checkpoints: Checkpoints | None = None  # counted and logged in the measured window
    run_dir: str = ""
    kept: KeptSetup | None = None  # with keep=True, after a run that succeeded: left on the host
    reused: bool = False  # the run used the kept setup it was given
    reuse_refused: str = ""  # why the kept setup it was given could not be used (then discarded)
    # With client hosts: each one's share (with one, the same figures as the run's own).
    clients: list[ClientResult] = field(default_factory=list)
    loaded_epoch: float | None = None  # every database loaded, by the server's clock: the barrier
    start_skew_ms: float | None = None  # how far apart the client hosts' pgbench started
    pgbench_started_epoch: float | None = None  # when pgbench started (the first of several), by its host's clock
    failed_client: str = ""  # the client host whose pgbench failed, in a run with several
    failure: str = ""  # what went wrong with it, said whole ("pgbench on lab3 failed (exit status 1)")
    stages: dict[str, float] = field(default_factory=dict)  # seconds each stage took (benchmark.py)
    method: MethodReadings = field(default_factory=MethodReadings)  # memory, durability, the host as it was
    state_before: dict[str, Any] = field(default_factory=dict)  # what state.py did before measuring
    warmup_run: WarmupRun | None = None  # the separate warm-up before the measurement, if any
    device_health: SmartHealth | None = None  # the device's SMART health, read once collected (host/smart.py)
