"""Read-side queries for pages: each page's data in a fixed, small number of queries."""

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, Func, IntegerField, Prefetch, QuerySet
from django.db.models.functions import Right
from django.shortcuts import get_object_or_404

from runs.bench.selectors.clients import run_client_series
from runs.jobs.selectors import HostWait, run_wait
from runs.models import (
    Device,
    Host,
    OsSource,
    PgInstall,
    Run,
    RunArtifact,
    RunOsSeries,
    RunSample,
    RunState,
    RunWarmupSample,
)


def inventory_hosts() -> QuerySet[Host]:
    """All hosts with their devices and PostgreSQL installs, in three queries (with the build a
    host is busy with, if any, in the first)."""
    return (
        Host.objects.select_related("claimed_by_build", "claimed_by_baseline")
        .prefetch_related(
            Prefetch("devices", queryset=Device.objects.order_by("name")),
            Prefetch("pg_installs", queryset=PgInstall.objects.order_by("version", "block_size")),
        )
        .order_by("-enabled", "name")
    )


def run_with_details(run_id: int) -> Run:
    queryset = Run.objects.select_related(
        "server_host", "device", "pg_install", "queued_by", "configuration", "library_script"
    )
    return get_object_or_404(queryset.prefetch_related("transitions", "run_clients__host"), pk=run_id)


def run_os_series(run: Run, columns: Collection[str] | None = None) -> dict[str, dict[str, list[float | None]]]:
    """The run's iostat and vmstat columns (all, or those named), source -> column -> a value a
    sample, in one query."""
    stored = RunOsSeries.objects.filter(run=run)
    if columns is not None:
        stored = stored.filter(column__in=columns)
    series: dict[str, dict[str, list[float | None]]] = {source: {} for source in OsSource.values}
    for source, column, values in stored.order_by("source", "column").values_list("source", "column", "values"):
        series[source][column] = values
    return series


# A sample's columns beyond pgbench's, where the samples have them: sysbench's queries per second and
# its per-second latency, which is its 95th percentile (the lab side adds them; none is required).
SAMPLE_EXTRAS = tuple(
    name for name in ("qps", "latency_p95_ms") if name in {field.name for field in RunSample._meta.concrete_fields}
)


def run_chart_data(run: Run) -> dict[str, Any]:
    """The run's per-second series as parallel arrays, in two queries (what the charts draw):
    the samples, and the iostat/vmstat columns drawn."""
    rows = (
        RunSample.objects.filter(run=run)
        .order_by("second")
        .values_list("second", "tps", "latency_ms", "warmup", *SAMPLE_EXTRAS)
    )
    columns = (
        [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in range(4 + len(SAMPLE_EXTRAS))]
    )
    seconds, tps, latency, warmup, *extras = columns
    drawn = {
        OsSource.IOSTAT.value: ("util_pct", "r_await_ms", "w_await_ms", "r_per_s", "w_per_s"),
        OsSource.VMSTAT.value: ("us", "sy", "wa"),
    }
    os_series = run_os_series(run, [column for columns in drawn.values() for column in columns])
    clients = list(run.run_clients.all())  # prefetched with their hosts by the run page
    return {
        "run": run.pk,
        "state": run.state,
        "warmup_s": run.warmup_s,
        "duration_s": run.duration_s,
        "seconds": seconds,
        "tps": tps,
        "latency_ms": latency,
        "warmup": warmup,
        "driver": run.driver,
        # sysbench's per-second columns, when its samples have any (a pgbench run's are all empty).
        **{
            name: values
            for name, values in zip(SAMPLE_EXTRAS, extras, strict=True)
            if any(v is not None for v in values)
        },
        # Several client hosts: each one's seconds beside the run's (their total).
        "client_names": [client.host.name for client in clients],
        "clients": run_client_series(clients),
        # Latency second by second: percentiles from the per-transaction logs, else what the
        # aggregate log has (each interval's min, mean and max); "kind" says which.
        **run_latency_series(run),
        # Marked on the charts: when each checkpoint of the measured window began, and its kind.
        "checkpoints": run_checkpoint_events(run),
        # The separate warm-up run's own seconds (drawn before the measurement's chart), if it had one.
        "warmup_run": run_warmup_series(run),
        **{
            source: {column: os_series[source].get(column, []) for column in columns}
            for source, columns in drawn.items()
        },
    }


def run_warmup_series(run: Run) -> dict[str, Any] | None:
    """The warm-up run's per-second tps and latency, its clients and seconds (one query); None
    without one. Never part of the measurement's series."""
    if not run.warmup_run_s:
        return None
    rows = RunWarmupSample.objects.filter(run=run).order_by("second").values_list("second", "tps", "latency_ms")
    seconds, tps, latency = (list(column) for column in zip(*rows, strict=True)) if rows else ([], [], [])
    summary = (run.environment or {}).get("warmup_run") or {}
    return {
        "clients": run.warmup_run_clients or run.clients,
        "duration_s": run.warmup_run_s,
        "seconds": seconds,
        "tps": tps,
        "latency_ms": latency,
        "summary_tps": summary.get("tps"),
        "summary_latency_ms": summary.get("latency_avg_ms"),
    }


PERCENTILE_SERIES = ("p50_ms", "p95_ms", "p99_ms", "late", "skipped")
INTERVAL_SERIES = ("min_ms", "mean_ms", "max_ms", "skipped")


def run_latency_series(run: Run) -> dict[str, Any]:
    """The run's per-second latency as arrays indexed by second - 1 (None: nothing that second),
    from what its results stored (Run.metrics; no query)."""
    metrics = run.metrics or {}
    seconds = metrics.get("latency_seconds") or []
    if seconds:
        length = max(second["second"] for second in seconds)
        columns: dict[str, list[float | None]] = {name: [None] * length for name in PERCENTILE_SERIES}
        for second in seconds:
            for name in PERCENTILE_SERIES:
                columns[name][second["second"] - 1] = second[name]
        return {"latency_kind": "percentiles", "latency": columns}
    intervals = metrics.get("aggregate") or []
    if intervals:
        means = [_interval_ms(i["latency_sum_us"], i["latency_count"]) for i in intervals]
        columns = {
            "min_ms": [i["latency_min_us"] / 1000 if i["latency_count"] else None for i in intervals],
            "mean_ms": means,
            "max_ms": [i["latency_max_us"] / 1000 if i["latency_count"] else None for i in intervals],
            "skipped": [i.get("skipped") for i in intervals],
        }
        return {"latency_kind": "intervals", "latency": columns}
    return {"latency_kind": "", "latency": {}}


def _interval_ms(total_us: float, count: int) -> float | None:
    return total_us / count / 1000 if count else None


def run_checkpoint_events(run: Run) -> list[dict[str, Any]]:
    """The checkpoints of the run's measured window its environment records (none: not logged,
    or a run stored before they were)."""
    checkpoints = ((run.environment or {}).get("method") or {}).get("checkpoints") or {}
    return list(checkpoints.get("events") or [])


# ---- the run page: its raw outputs, its log once finished, its place in the queue or the run ----


@dataclass(frozen=True)
class StoredOutput:
    name: str
    size_bytes: int


def run_outputs(run: Run) -> list[StoredOutput]:
    """The run's raw outputs, by name, with their sizes (not their contents: a week-long run's
    pgbench stderr has a line a second)."""
    octets = Func(F("content"), function="octet_length", output_field=IntegerField())
    rows = RunArtifact.objects.filter(run=run).annotate(size=octets).order_by("name").values_list("name", "size")
    return [StoredOutput(name, size) for name, size in rows]


# What the live log showed while the run ran comes from these outputs (the lab layer's lines of
# pgbench -i and of pgbench's stderr), in this order; a finished page shows their last lines.
LOG_NAME = RunArtifact.LOG_NAME
LOG_OUTPUTS = {
    LOG_NAME: "the live log, as the run ended",
    "pgbench-init.txt": "pgbench -i (loading the database)",
    "pgbench.stderr.txt": "pgbench (its progress and messages)",
}
LOG_TAIL_LINES = 200
LOG_TAIL_CHARS = 200 * 400  # read from the database: 200 lines of a few hundred characters at most


@dataclass(frozen=True)
class LogPart:
    name: str  # the raw output whose last lines these are
    title: str
    text: str
    lines: int  # in text
    whole: bool  # the whole output, not only its last lines


def run_log(run: Run) -> list[LogPart]:
    """A finished run's log from what is stored: the last lines of each output the live log
    showed, in one query that reads only the ends of long outputs."""
    stored = (
        RunArtifact.objects.filter(run=run, name__in=LOG_OUTPUTS)
        .annotate(tail=Right("content", LOG_TAIL_CHARS), size=Func(F("content"), function="length"))
        .values_list("name", "tail", "size")
    )
    rows = {name: (tail, size) for name, tail, size in stored}
    parts = []
    for name, title in LOG_OUTPUTS.items():
        if name not in rows:
            continue
        tail, size = rows[name]
        lines = tail.rstrip("\n").split("\n")
        whole = size <= LOG_TAIL_CHARS and len(lines) <= LOG_TAIL_LINES
        if not whole:  # a line cut by the character limit is dropped with the older ones
            lines = lines[1:][-LOG_TAIL_LINES:]
        parts.append(LogPart(name, title, "\n".join(lines), len(lines) if tail else 0, whole))
    return parts


@dataclass(frozen=True)
class Wait:
    """One host a queued run waits for, as its page says it: "lab2 busy with run 19; 2 runs ahead"."""

    host: str
    state: str  # "busy with run 19", "free", "is disabled (…)"
    queue: str  # "2 runs ahead", "next in line", "first in line", or "" (disabled, nothing ahead)
    busy_with: int | None  # the run that has the host now: its page is linked

    @property
    def text(self) -> str:
        return f"{self.host} {self.state}; {self.queue}" if self.queue else f"{self.host} {self.state}"


def _wait(wait: HostWait) -> Wait:
    state = wait.host_state
    if wait.ahead or wait.builds_ahead or wait.baselines_ahead:
        ahead = [f"{count} {noun}{'s' if count != 1 else ''}" for count, noun in
                 ((wait.ahead, "run"), (wait.builds_ahead, "build"), (wait.baselines_ahead, "fio baseline"))
                 if count]  # fmt: skip
        queue = f"{' and '.join(ahead)} ahead"
        if state == "free" and wait.first_ahead is not None:  # why a free host does not take this run
            waits = wait.first_ahead_waits_for
            doing = f"waiting for {' and '.join(waits)}" if waits else "next to start"
            queue = (
                f"run {wait.first_ahead} ahead of it, {doing}"
                if wait.ahead == 1 and not wait.builds_ahead and not wait.baselines_ahead
                else f"{queue}, the first (run {wait.first_ahead}) {doing}"
            )
    elif wait.disabled:
        queue = ""
    else:
        busy = wait.busy_with or wait.busy_with_build or wait.busy_with_baseline or wait.cleanup_pending_for
        queue = "next in line" if busy else "first in line"
    return Wait(wait.host, state, queue, wait.busy_with)


def run_waits(run: Run) -> list[Wait]:
    """What a queued run waits for, host by host (none: it is not queued, or its turn has come
    and a worker is starting it)."""
    return [_wait(wait) for wait in run_wait(run)]


# The states in which pgbench runs, and those around it.
PGBENCH_STATES = (RunState.WARMING_UP, RunState.MEASURING)


@dataclass(frozen=True)
class RunPosition:
    """Where a running run is: "measuring, second 16 of 30", and when pgbench ends."""

    text: str
    pgbench_ends_at: datetime | None  # from the step that started it (warming up, else measuring)
    seconds_left: int | None  # of pgbench's run, from the last second it reported


def run_position(run: Run) -> RunPosition | None:
    """A running run's position, from its steps and its last stored sample; None for a queued
    or finished run. The page's script keeps it up to date from the live events."""
    if run.state == RunState.QUEUED or run.is_finished:
        return None
    if run.state not in PGBENCH_STATES:
        return RunPosition(position_text(run, None), None, None)
    total = run.warmup_s + run.duration_s  # the measurement's pgbench
    started = next((t.at for t in run.transitions.all() if t.state in PGBENCH_STATES), None)
    second = RunSample.objects.filter(run=run).order_by("-second").values_list("second", flat=True).first()
    # From the first pgbench: a separate warm-up run's, then the measurement's.
    ends = started + timedelta(seconds=run.warmup_run_s + total) if started else None
    return RunPosition(position_text(run, second), ends, max(total - second, 0) if second is not None else None)


def position_text(run: Run, second: int | None) -> str:
    """Where pgbench is ("warming up, second 3 of 5", "measuring, second 16 of 30"); before and
    after it, the step and what comes next. static/js/run_detail.js says the same from live events."""
    measured = f"{run.warmup_s} s warm-up + {run.duration_s} s" if run.warmup_s else f"{run.duration_s} s"
    if run.state not in PGBENCH_STATES:
        if run.state in (RunState.PREPARING_STORAGE, RunState.INITIALIZING_DATABASE):
            return f"{run.get_state_display()}; then pgbench runs {measured}"
        return f"{run.get_state_display()}; pgbench has ended"
    if second is None and run.warmup_run_s and run.state == RunState.WARMING_UP:
        return (
            f"warm-up run ({run.warmup_run_clients or run.clients} clients, {run.warmup_run_s} s), then the measurement"
        )
    if second is None:
        return f"{run.get_state_display()}, waiting for pgbench's first second"
    if second <= run.warmup_s:
        return f"warming up, second {second} of {run.warmup_s}"
    return f"measuring, second {min(second - run.warmup_s, run.duration_s)} of {run.duration_s}"
