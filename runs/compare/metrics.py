"""The metrics a comparison and a campaign's statistics are made of, declared once: each with its
label, unit, which direction is better, and how a run's value is read. A new metric is one more
entry in METRICS (ARCHITECTURE.md, "Adding a metric")."""

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from runs.compare.stats import Direction
from runs.models import Run


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    direction: Direction
    value: Callable[[Run], float | None]


def _mean_util(run: Run) -> float | None:
    return run.device_util_pct  # computed when the results were stored (bench.services.os_series)


def _cache_hit_pct(run: Run) -> float | None:
    return run.cache_hit_pct


# sysbench's own figures (Run.metrics["sysbench"], stored by the lab side), read in the runs' query
# as attributes so a page never loads the metrics JSON: a pgbench run has none ("—").
SYSBENCH_FIGURES = {"sysbench_qps": "qps", "sysbench_errors_per_s": "errors_per_s"}


def metric_annotations() -> dict[str, Cast]:
    """What the runs' query annotates for the metrics that live in the metrics JSON."""
    return {name: Cast(KT(f"metrics__sysbench__{key}"), FloatField()) for name, key in SYSBENCH_FIGURES.items()}


def _annotated(name: str) -> Callable[[Run], float | None]:
    return lambda run: getattr(run, name, None)


def _vmstat_mean(run: Run, column: str) -> float | None:
    """A vmstat column's mean over the run (Run.os_means, computed when the results were stored)."""
    value = ((run.os_means or {}).get("vmstat") or {}).get(column)
    return float(value) if isinstance(value, int | float) else None


def cpu_busy_pct(run: Run) -> float | None:
    """CPU utilisation as the seed reads it: 100 % - idle (iowait counts as busy, as in vmstat's us+sy+wa+st)."""
    idle = _vmstat_mean(run, "id")
    return None if idle is None else 100.0 - idle


def cpu_iowait_pct(run: Run) -> float | None:
    return _vmstat_mean(run, "wa")


METRICS = (
    Metric("steady_tps", "tps (steady state)", "tps", "higher_is_faster", lambda run: run.steady_tps_mean),
    Metric("latency_avg", "latency, mean", "ms", "lower_is_faster", lambda run: run.latency_avg_ms),
    Metric("latency_p95", "latency p95", "ms", "lower_is_faster", lambda run: run.latency_p95_ms),
    Metric("latency_p99", "latency p99", "ms", "lower_is_faster", lambda run: run.latency_p99_ms),
    Metric("qps", "queries per second (sysbench)", "qps", "higher_is_faster", _annotated("sysbench_qps")),
    Metric("errors", "errors per second (sysbench)", "/s", "lower_is_faster", _annotated("sysbench_errors_per_s")),
    Metric("cache_hit", "cache hit ratio", "%", "neutral", _cache_hit_pct),
    Metric("util", "device utilisation (iostat %util, mean)", "%", "neutral", _mean_util),
    Metric("cpu_busy", "CPU busy (100 - vmstat idle, mean)", "%", "neutral", cpu_busy_pct),
    Metric("cpu_iowait", "CPU iowait (vmstat wa, mean)", "%", "neutral", cpu_iowait_pct),
)
