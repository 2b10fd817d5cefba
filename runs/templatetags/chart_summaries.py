"""Text summaries of charts: the numbers a chart draws, as a small table next to it.

A chart is a picture: a screen reader cannot read it, a reader who cannot tell its colours apart
cannot match lines to the legend, and nobody can copy a value off it. So each chart gets a
summary, shown beside it by the partial templates/runs/_chart_summary.html and named by the
canvas's aria-describedby (its id is the `summary_id` given to the partial):

    {% load chart_summaries %}
    {% compare_percentiles_summary result as summary %}
    <canvas id="percentiles-chart" role="img" aria-label="…" aria-describedby="percentiles-summary"></canvas>
    {% include "runs/_chart_summary.html" with summary=summary summary_id="percentiles-summary" %}

The tags read what the page already has (a comparison's result, a run's chart data): no queries.
Without it (the partial rendered on its own, as test_compare_charts does) a summary has no rows.
"""

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django import template

from runs.compare.selectors.comparison import (
    IOSTAT_MEANS,
    PERCENTILES,
    VMSTAT_MEANS,
    ComparisonResult,
    latency_percentiles,
    os_means,
    shown_runs,
)

register = template.Library()

MISSING = "–"


@dataclass(frozen=True)
class ChartSummary:
    """A chart's numbers: a caption saying what they are, column headings, and one row per
    series or group (its first cell names it)."""

    caption: str
    columns: tuple[str, ...]
    rows: Sequence[tuple[str, ...]] = ()

    @property
    def has_values(self) -> bool:
        """Whether any row has a number: a summary of nothing is not shown."""
        return any(cell != MISSING for row in self.rows for cell in row[1:])


# Column headings of the OS means, with their units (the keys are the comparison's and the run's series':
# runs.compare.selectors.comparison).
OS_COLUMNS: dict[str, dict[str, str]] = {
    "iostat": {
        "util_pct": "utilisation (%)",
        "r_await_ms": "read await (ms)",
        "w_await_ms": "write await (ms)",
        "r_per_s": "reads/s",
        "w_per_s": "writes/s",
    },
    "vmstat": {"us": "CPU user (%)", "sy": "CPU system (%)", "wa": "CPU iowait (%)"},
    # Not the OS's, but a run's per-second series summarised alike (run_page.run_latency_series).
    "latency": {
        "p50_ms": "p50 (ms)",
        "p95_ms": "p95 (ms)",
        "p99_ms": "p99 (ms)",
        "min_ms": "min (ms)",
        "mean_ms": "mean (ms)",
        "max_ms": "max (ms)",
        "late": "late transactions",
        "skipped": "skipped transactions",
    },
}
PERCENTILE_COLUMNS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9"}


def number(value: float | None, digits: int = 1) -> str:
    """A value as the tables show it: fixed decimals with thousands separated, or a dash."""
    return MISSING if value is None else f"{value:,.{digits}f}"


def _present(values: Sequence[float | None]) -> list[float]:
    return [value for value in values if value is not None]


def _spread(values: Sequence[float | None], digits: int = 1) -> tuple[str, str, str]:
    """Mean, min and max of the values present, formatted."""
    present = _present(values)
    if not present:
        return MISSING, MISSING, MISSING
    return number(statistics.fmean(present), digits), number(min(present), digits), number(max(present), digits)


# ---- a comparison (templates/runs/_compare_charts.html) ----


def _compared(result: object) -> ComparisonResult | None:
    """The comparison the page has, or None (a template gives "" for a missing variable)."""
    return result if isinstance(result, ComparisonResult) else None


@register.simple_tag
def compare_series_summary(result: object) -> ChartSummary:
    """The overlaid per-second chart: each shown run's steady-state numbers."""
    compared = _compared(result)
    group_of = {run.pk: group for group in compared.groups for run in group.runs} if compared else {}
    rows = [
        (
            f"run {run.pk} · {group_of[run.pk].label}",
            f"{run.warmup_s} s",
            f"{run.duration_s} s",
            number(run.steady_tps_mean)
            + ("" if run.steady_tps_stddev is None else f" ± {number(run.steady_tps_stddev)}"),
            number(run.latency_avg_ms, 3),
        )
        for run in (shown_runs(compared) if compared else [])
    ]
    columns = ("run · group", "warm-up", "measured", "steady-state tps (mean ± sd)", "latency, whole run (ms)")
    return ChartSummary("Each shown run, warm-up excluded from the tps", columns, rows)


@register.simple_tag
def compare_percentiles_summary(result: object) -> ChartSummary:
    """The latency percentile bars: per group, the mean over its finished runs (ms)."""
    groups = compared.groups if (compared := _compared(result)) else []
    labels = {group.index: group.label for group in groups}
    rows = [
        (labels[row["group"]], *(number(row[name], 3) for name in PERCENTILES)) for row in latency_percentiles(groups)
    ]
    columns = ("group", *(f"{PERCENTILE_COLUMNS[name]} (ms)" for name in PERCENTILES))
    return ChartSummary("Latency percentiles per group, mean over its finished runs", columns, rows)


@register.simple_tag
def compare_os_summary(result: object, source: str) -> ChartSummary:
    """The iostat or vmstat bars: per group, the mean of its runs' means."""
    keys = IOSTAT_MEANS if source == "iostat" else VMSTAT_MEANS
    groups = compared.groups if (compared := _compared(result)) else []
    labels = {group.index: group.label for group in groups}
    rows = [(labels[row["group"]], *(number(row[source][key]) for key in keys)) for row in os_means(groups)]
    columns = ("group", *(OS_COLUMNS[source][key] for key in keys))
    return ChartSummary(f"{source} per group, mean of its finished runs' means", columns, rows)


# ---- a run (for templates/runs/run_detail.html: its chart data, runs.bench.selectors.run_page.run_chart_data) ----


@register.simple_tag
def run_series_summary(chart: Mapping[str, Any]) -> ChartSummary:
    """The per-second tps and latency chart: mean, min and max, warm-up and measured apart."""
    seconds, warmup = chart.get("seconds", []), chart.get("warmup", [])
    rows = []
    for phase, wanted in (("warm-up", True), ("measured", False)):
        at = [index for index, _ in enumerate(seconds) if bool(warmup[index]) is wanted]
        if not at:
            continue
        for name, key, digits in (("tps", "tps", 1), ("latency (ms)", "latency_ms", 3)):
            values = [chart[key][index] for index in at]
            rows.append((f"{name}, {phase}", f"{len(at)} s", *_spread(values, digits)))
    return ChartSummary("Per second, seconds since pgbench started", ("series", "seconds", "mean", "min", "max"), rows)


@register.simple_tag
def run_os_summary(chart: Mapping[str, Any], source: str, keys: str = "") -> ChartSummary:
    """An iostat or vmstat chart of a run: each drawn column's mean, min and max per second;
    `keys` (comma-separated) picks the columns one chart draws, e.g. "r_per_s,w_per_s"."""
    columns = chart.get(source) or {}
    wanted = [key for key in keys.split(",") if key] or list(columns)
    rows = [
        (OS_COLUMNS[source].get(key, key), str(len(_present(columns[key]))), *_spread(columns[key]))
        for key in wanted
        if _present(columns.get(key, []))  # a column the tool never printed is left out
    ]
    return ChartSummary(f"{source}, per second of the run", ("series", "samples", "mean", "min", "max"), rows)
