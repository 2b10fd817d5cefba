"""Benchmark runs: what was asked (the specification, one column per field so runs can be
filtered and compared field by field), what happened (states with timestamps, failures),
and what came out (summary numbers, per-second samples, iostat/vmstat series, metrics, raw outputs).

The environment a run saw is copied into the run when it runs, never read back from the
inventory later: an edited host or device must not rewrite history.
"""

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from runs.lab.pgbench.options import MAX_LATENCY_LIMIT_MS, MAX_PARTITIONS, MIN_LATENCY_LIMIT_MS, PARTITION_METHODS
from runs.lab.sysbench.options import MAX_TABLE_SIZE, MAX_TABLES
from runs.models.inventory import Device, Host, PgInstall
from runs.models.job_keys import host_job_key
from runs.models.notes import Annotated
from runs.models.workloads import WorkloadScript

MAX_SECONDS = 7 * 24 * 3600  # the longest duration, and the longest warm-up, a run may ask for


class RunState(models.TextChoices):
    QUEUED = "queued", "queued"
    PREPARING_STORAGE = "preparing_storage", "preparing storage"
    INITIALIZING_DATABASE = "initializing_database", "initializing database"
    WARMING_UP = "warming_up", "warming up"
    MEASURING = "measuring", "measuring"
    COLLECTING = "collecting", "collecting"
    CLEANING_UP = "cleaning_up", "cleaning up"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


ACTIVE_STATES = [
    RunState.PREPARING_STORAGE,
    RunState.INITIALIZING_DATABASE,
    RunState.WARMING_UP,
    RunState.MEASURING,
    RunState.COLLECTING,
    RunState.CLEANING_UP,
]
FINAL_STATES = [RunState.DONE, RunState.FAILED, RunState.CANCELLED]


class Filesystem(models.TextChoices):
    EXT4 = "ext4", "ext4"
    XFS = "xfs", "xfs"
    BTRFS = "btrfs", "btrfs"
    TMPFS = "tmpfs", "tmpfs (RAM)"
    DIRECTORY = "directory", "directory (no mkfs)"


class RunOrigin(models.TextChoices):
    MEASURED = "measured", "measured"  # benchlab ran it on a lab host
    IMPORTED = "imported", "imported"  # pgbench output uploaded (runs.imports): it never ran on a host here


class Driver(models.TextChoices):
    PGBENCH = "pgbench", "pgbench"
    SYSBENCH = "sysbench", "sysbench"


class Workload(models.TextChoices):
    # pgbench's (the driver pgbench) ...
    TPCB_LIKE = "tpcb-like", "TPC-B like (read/write)"
    SIMPLE_UPDATE = "simple-update", "simple update (-N)"
    SELECT_ONLY = "select-only", "select only (-S)"
    CUSTOM = "custom", "custom script"
    LIBRARY = "library", "from the workload library"
    # ... and sysbench's OLTP tests (the driver sysbench), named as sysbench names them.
    OLTP_READ_ONLY = "oltp_read_only", "sysbench oltp_read_only"
    OLTP_READ_WRITE = "oltp_read_write", "sysbench oltp_read_write"
    OLTP_WRITE_ONLY = "oltp_write_only", "sysbench oltp_write_only"
    OLTP_POINT_SELECT = "oltp_point_select", "sysbench oltp_point_select"
    OLTP_INSERT = "oltp_insert", "sysbench oltp_insert"


class QueryMode(models.TextChoices):
    SIMPLE = "simple", "simple"
    EXTENDED = "extended", "extended"
    PREPARED = "prepared", "prepared"


class CacheState(models.TextChoices):
    WARM = "warm", "warm (the warm-up, as set)"
    COLD = "cold", "cold (sync, drop caches, restart PostgreSQL before measuring)"


class DataState(models.TextChoices):
    # "reused" is the default: a campaign's consecutive runs of one setup take over the storage
    # and database the previous run kept (bench.services.reuse); a run with nothing kept for it
    # loads freshly, and records "fresh" (environment["method"]["state"]["data"]).
    REUSED = "reused", "reused from the previous run when it kept its setup, else loaded"
    FRESH = "fresh", "freshly loaded"
    FROZEN = "frozen", "loaded, then VACUUM FREEZE + CHECKPOINT"


class PartitionMethod(models.TextChoices):
    RANGE = PARTITION_METHODS[0], PARTITION_METHODS[0]
    HASH = PARTITION_METHODS[1], PARTITION_METHODS[1]


# pgbench reads --random-seed as an unsigned 64-bit number; a quadrillion seeds are plenty, and the
# limit reads whole in the form's message (1e+15) and exactly in a browser's number field.
MAX_SEED = 10**15
MAX_SETTLE_S = 600


class Run(Annotated):
    # --- specification ---
    server_host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="served_runs")
    device = models.ForeignKey(Device, on_delete=models.PROTECT, related_name="runs")
    filesystem = models.CharField(max_length=20, choices=Filesystem.choices, default=Filesystem.EXT4)
    mkfs_options = models.CharField(max_length=200, blank=True)
    mount_options = models.CharField(max_length=300, blank=True)
    pg_install = models.ForeignKey(PgInstall, on_delete=models.PROTECT, related_name="runs")
    pg_settings = models.TextField("PostgreSQL settings", blank=True, help_text="key = value lines")
    driver = models.CharField(
        "driver",
        max_length=10,
        choices=Driver.choices,
        default=Driver.PGBENCH,
        help_text="The program that loads and measures: pgbench, or sysbench's OLTP tests.",
    )
    workload = models.CharField(max_length=20, choices=Workload.choices, default=Workload.TPCB_LIKE)
    custom_script = models.TextField(blank=True)
    sysbench_tables = models.PositiveIntegerField(
        "sysbench tables",
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TABLES)],
        help_text="sysbench --tables: how many sbtest tables it creates and spreads its queries over.",
    )
    sysbench_table_size = models.PositiveIntegerField(
        "sysbench table size (rows)",
        default=10_000,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TABLE_SIZE)],
        help_text="sysbench --table-size: rows in each table (about 256 bytes a row with its indexes).",
    )
    # A workload from the library (runs/models/workloads.py): the script's version and the values of
    # its parameters ({} for its defaults); the text pgbench ran, with the values, is script_as_run.
    library_script = models.ForeignKey(
        WorkloadScript,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="runs",
        verbose_name="library script",
        help_text="With the workload from the workload library: which script (the newest version unless chosen).",
    )
    workload_params = models.JSONField(
        "workload parameters",
        default=dict,
        blank=True,
        help_text="The library script's parameters, by name; one left out takes its default.",
    )
    script_as_run = models.TextField(
        "script as run",
        blank=True,
        editable=False,
        help_text="The library script's text as pgbench ran it, its parameters' values set at its top.",
    )
    scale = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1), MaxValueValidator(100_000)])
    clients = models.PositiveIntegerField(default=4, validators=[MinValueValidator(1), MaxValueValidator(10_000)])
    threads = models.PositiveIntegerField(default=2, validators=[MinValueValidator(1), MaxValueValidator(1_000)])
    duration_s = models.PositiveIntegerField(
        "duration (s)", default=60, validators=[MinValueValidator(1), MaxValueValidator(MAX_SECONDS)]
    )
    warmup_s = models.PositiveIntegerField(
        "warm-up (s)",
        default=0,
        validators=[MaxValueValidator(MAX_SECONDS)],
        help_text="Run before the measured duration and left out of the statistics.",
    )
    # A separate pgbench before the measurement (seed 004: 5 minutes at 10 clients, then the measured
    # 5 minutes at 20), in the same cluster, with the same workload and options.
    warmup_run_s = models.PositiveIntegerField(
        "warm-up run (s)",
        default=0,
        validators=[MaxValueValidator(MAX_SECONDS)],
        help_text="A separate pgbench run before the measurement, same workload and options, its seconds shown "
        "on the run page and kept out of the results. It starts after the CHECKPOINT and settle pause; the "
        "measurement starts right after it ends, as the seed's did. 0: none.",
    )
    warmup_run_clients = models.PositiveIntegerField(
        "warm-up run clients",
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(10_000)],
        help_text="The warm-up run's clients (its threads: at most these). Empty: as many as the measurement.",
    )
    query_mode = models.CharField(max_length=10, choices=QueryMode.choices, default=QueryMode.SIMPLE)
    rate_limit_tps = models.FloatField("rate limit (tps)", null=True, blank=True, validators=[MinValueValidator(0.1)])
    # pgbench's own options for the data it loads (pgbench -i) and the latency it holds to: the
    # defaults are pgbench's, so a run that sets none has the command it always had.
    latency_limit_ms = models.FloatField(
        "latency limit (ms)",
        null=True,
        blank=True,
        validators=[MinValueValidator(MIN_LATENCY_LIMIT_MS), MaxValueValidator(MAX_LATENCY_LIMIT_MS)],
        help_text="pgbench --latency-limit: transactions slower than this are counted as late; under a rate "
        "limit, those already this late when due are skipped, not sent. Empty: no limit.",
    )
    partitions = models.PositiveIntegerField(
        "partitions",
        default=0,
        validators=[MaxValueValidator(MAX_PARTITIONS)],
        help_text="pgbench -i --partitions: pgbench_accounts split in this many partitions. 0: not partitioned.",
    )
    partition_method = models.CharField(
        "partition method",
        max_length=10,
        blank=True,
        choices=PartitionMethod.choices,
        help_text="pgbench -i --partition-method, with partitions only. Empty: pgbench's default (range).",
    )
    fillfactor = models.PositiveIntegerField(
        "fillfactor",
        default=100,
        validators=[MinValueValidator(10), MaxValueValidator(100)],
        help_text="pgbench -i -F: how full (%) the loaded tables' pages are, leaving room for HOT updates.",
    )
    unlogged_tables = models.BooleanField(
        "unlogged tables", default=False, help_text="pgbench -i --unlogged-tables: the tables write no WAL."
    )
    foreign_keys = models.BooleanField(
        "foreign keys",
        default=False,
        help_text="pgbench -i --foreign-keys: foreign keys between the tables (the init step f).",
    )
    init_steps = models.CharField(
        "initialisation steps",
        max_length=20,
        blank=True,
        help_text="pgbench -i -I, in order, from d t g G v p f (drop, tables, generate client- or server-side, "
        "vacuum, primary keys, foreign keys). Empty: pgbench's default, dtgvp.",
    )
    client_hosts = models.ManyToManyField(
        Host,
        through="runs.RunClient",
        related_name="client_runs",
        blank=True,
        help_text="Run pgbench on these hosts over TCP, all at once; none: on the server itself.",
    )
    shared_database = models.BooleanField(
        "one database for all client hosts",
        default=False,
        help_text="All client hosts run against one database; otherwise each has its own (bench_1, bench_2, …).",
    )
    log_sampling_rate = models.FloatField(
        "transaction log sampling",
        null=True,
        blank=True,
        default=1.0,
        validators=[MinValueValidator(0.0001), MaxValueValidator(1.0)],
        help_text="Fraction of transactions pgbench logs one by one (-l --sampling-rate), for latency "
        "percentiles. Empty: per-second aggregates only.",
    )
    random_seed = models.BigIntegerField(
        "random seed",
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(MAX_SEED)],
        help_text="pgbench --random-seed. Empty: benchlab picks one when the run is queued and records it; "
        "Run again and a campaign's retry use the same seed unless it is changed.",
    )
    cache_state = models.CharField(
        "cache state",
        max_length=10,
        choices=CacheState.choices,
        default=CacheState.WARM,
        help_text="Cold: sync, drop the OS caches and restart PostgreSQL just before measuring.",
    )
    data_state = models.CharField("data state", max_length=10, choices=DataState.choices, default=DataState.REUSED)
    checkpoint_before = models.BooleanField(
        "CHECKPOINT before measuring",
        default=True,
        help_text="Write out what loading left dirty, so the measured window does not pay for it.",
    )
    settle_s = models.PositiveIntegerField(
        "settle (s)",
        default=5,
        validators=[MaxValueValidator(MAX_SETTLE_S)],
        help_text="Before measuring, wait until the device has been quiet for a second, at most this long.",
    )

    # A campaign's run: which configuration of it, and which repetition (from 1).
    campaign = models.ForeignKey(
        "runs.Campaign", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs", editable=False
    )
    configuration = models.ForeignKey(
        "runs.CampaignConfiguration",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
        editable=False,
    )
    repetition = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # The regression watch's series (runs.watch.series.series_key of the run's spec), written once when
    # the run is queued (runs.bench.services.runs): a series' runs are then an index lookup.
    series_key = models.CharField(max_length=16, null=True, blank=True, db_index=True, editable=False)

    # Names the run's mountpoint and directories on lab hosts: unique across benchlab
    # installations that share a lab (a test suite and a real one), unlike the id.
    key = models.UUIDField(default=uuid.uuid4, editable=False, unique=True)

    # --- where it came from ---
    origin = models.CharField(max_length=10, choices=RunOrigin.choices, default=RunOrigin.MEASURED, db_index=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="imported_runs"
    )
    # The uploaded files an imported run was read from: [{"name", "kind", "bytes", "sha256"}], in the
    # order given; their text is kept as the run's outputs (RunArtifact "import.<kind>.<n>.txt").
    imported_files = models.JSONField(default=list, blank=True, editable=False)

    # --- what happened ---
    state = models.CharField(max_length=30, choices=RunState.choices, default=RunState.QUEUED, db_index=True)
    queued_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="runs")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    failed_step = models.CharField(max_length=30, blank=True, choices=RunState.choices)
    failed_command = models.TextField(blank=True)
    failed_exit_status = models.IntegerField(null=True, blank=True)
    failed_output = models.TextField(blank=True, help_text="The tail of the failed step's output.")
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # stamped while a worker runs it
    # Bytes of pgbench's progress output already stored as samples, stamped with the heartbeat:
    # a worker that reattaches after this one died follows on from there (bench.services.reattach).
    progress_offset = models.BigIntegerField(default=0, editable=False)
    # When its results were stored, before its cleanup on the lab hosts: a worker that dies after
    # this loses no measurement (bench.services.sweeper finishes the cleanup and ends the run from them).
    results_stored_at = models.DateTimeField(null=True, blank=True, editable=False)

    # --- what came out ---
    environment = models.JSONField(default=dict, blank=True)
    # With several client hosts: how far apart their pgbench processes started (by their clocks).
    start_skew_ms = models.FloatField("start skew between client hosts (ms)", null=True, blank=True)
    summary = models.JSONField(default=dict, blank=True)  # pgbench's summary, every field
    tps = models.FloatField(null=True, blank=True)
    latency_avg_ms = models.FloatField(null=True, blank=True)
    latency_stddev_ms = models.FloatField(null=True, blank=True)
    steady_tps_mean = models.FloatField(null=True, blank=True)
    steady_tps_stddev = models.FloatField(null=True, blank=True)
    failed_transactions = models.BigIntegerField(null=True, blank=True)
    skipped_transactions = models.BigIntegerField(null=True, blank=True)
    # Over the measured window, from the per-transaction log; every percentile is in metrics["latency"].
    latency_p50_ms = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    latency_p99_ms = models.FloatField(null=True, blank=True)
    # pg_stat deltas, the pgbench log's aggregates and latency percentiles, for the run's own page
    # and API detail: queries over many runs leave it out. The iostat/vmstat series are RunOsSeries.
    metrics = models.JSONField(default=dict, blank=True)
    # Small figures lists and comparisons read instead of the series (bench.services.os_series).
    device_util_pct = models.FloatField("device utilisation (%)", null=True, blank=True)  # mean iostat %util
    cache_hit_pct = models.FloatField("cache hit ratio (%)", null=True, blank=True)  # from the pg_stat deltas
    # {"iostat": {"util_pct", "r_await_ms", "w_await_ms", "r_per_s", "w_per_s": mean},
    #  "vmstat": {"us", "sy", "wa", "id": mean}}; a mean is null without samples; {} before results.
    os_means = models.JSONField(default=dict, blank=True)
    # What the method checks (runs.method) read off the stored facts, kept for lists and filters:
    # "" until results are stored, or for a run that recorded too little to tell.
    memory_tier = models.CharField(max_length=30, blank=True, editable=False)
    durable = models.BooleanField(null=True, blank=True, editable=False)
    steady = models.BooleanField(null=True, blank=True, editable=False)  # False: tps drifted or swung with checkpoints
    # The warnings the user overrode before queueing, with the reason given: {check key: reason}.
    method_overrides = models.JSONField(default=dict, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["server_host", "state"]),
            models.Index(fields=["device", "-created_at"]),
            models.Index(fields=["-created_at", "-id"], name="run_newest_first"),  # the run list's pages
            GinIndex(fields=["tags"], name="run_tags"),  # the tag filter (runs.bench.filters)
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.get_state_display()})"

    @property
    def run_key(self) -> str:
        """Names its directories and mount on the lab hosts (runs.lab.benchmark.spec.run_dir_for)."""
        return host_job_key("run", self.pk, self.key)

    @property
    def is_imported(self) -> bool:
        return self.origin == RunOrigin.IMPORTED

    @property
    def is_finished(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def client_host_list(self) -> list[Host]:
        """The client hosts in the order the run names them (prefetch `run_clients__host` for lists)."""
        return [run_client.host for run_client in self.run_clients.all()]

    @property
    def hosts(self) -> list[Host]:
        return [self.server_host, *self.client_host_list]


class RunTransition(models.Model):
    """Each state a run entered, and when."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="transitions")
    state = models.CharField(max_length=30, choices=RunState.choices)
    at = models.DateTimeField()
    # Why, when the state does not say it: a run sent back to queued because a host did not answer.
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.state} at {self.at:%H:%M:%S}"


class RunSample(models.Model):
    """One second of a run, as pgbench's progress line (or sysbench's report line) reported it
    (the live series)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    second = models.PositiveIntegerField()  # elapsed seconds since pgbench started
    tps = models.FloatField()
    latency_ms = models.FloatField(null=True)  # the second's mean; sysbench prints none (null)
    latency_stddev_ms = models.FloatField(null=True)
    failed = models.IntegerField(null=True)
    lag_ms = models.FloatField(null=True)
    skipped = models.IntegerField(null=True)
    warmup = models.BooleanField(default=False)
    qps = models.FloatField(null=True)  # statements a second: sysbench's
    latency_p95_ms = models.FloatField(null=True)  # the second's 95th percentile: sysbench's

    class Meta:
        ordering = ["run", "second"]
        constraints = [models.UniqueConstraint(fields=["run", "second"], name="runsample_one_per_second")]

    def __str__(self) -> str:
        return f"run {self.run_id} second {self.second}: {self.tps:.1f} tps"


class RunWarmupSample(models.Model):
    """One second of a run's separate warm-up pgbench (Run.warmup_run_s): shown before the
    measurement on the run page, never read by results, comparisons or campaigns."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="warmup_samples")
    second = models.PositiveIntegerField()  # elapsed seconds since the warm-up's pgbench started
    tps = models.FloatField()
    latency_ms = models.FloatField()

    class Meta:
        ordering = ["run", "second"]
        constraints = [models.UniqueConstraint(fields=["run", "second"], name="runwarmupsample_one_per_second")]

    def __str__(self) -> str:
        return f"run {self.run_id} warm-up second {self.second}: {self.tps:.1f} tps"


class OsSource(models.TextChoices):
    IOSTAT = "iostat", "iostat"
    VMSTAT = "vmstat", "vmstat"


class RunOsSeries(models.Model):
    """One column of a run's iostat or vmstat samples (util_pct, us, ...): a value a second, in
    sample order, as a PostgreSQL array; null where the tool printed no value.

    A row per (run, source, column) rather than a row per (run, source) with a column per field:
    the two tools have different columns, and sysstat and procps versions add or drop some (aqu-sz,
    st, gu), so the table stays the same whatever the source or version; a reader fetches only
    the columns it draws (the run page 8 of some 26) in one query; and each array is stored
    (compressed, out of line when long) apart from the run's row, so no list query ever reads it.
    Timestamps are not kept: the charts plot by sample, one a second, and the raw outputs
    (RunArtifact iostat.txt, vmstat.txt) keep them.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="os_series")
    source = models.CharField(max_length=10, choices=OsSource.choices)
    column = models.CharField(max_length=30)
    values = ArrayField(models.FloatField(null=True))

    class Meta:
        ordering = ["run", "source", "column"]
        verbose_name_plural = "run OS series"
        constraints = [models.UniqueConstraint(fields=["run", "source", "column"], name="runosseries_one_per_column")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.source} {self.column}: {len(self.values)} values"


class RunArtifact(models.Model):
    """A raw output of the run, downloadable as it was (pgbench stdout/stderr, logs, iostat…)."""

    # The live log itself, kept for a run that ended before its results (bench.services.results).
    LOG_NAME = "log.txt"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=100)
    content = models.TextField()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="runartifact_unique_name")]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.name}"
