"""A sysbench run's own figures as Run.metrics["sysbench"] keeps them (pure): what its summary says
beyond the run's columns, and its latency histogram. The run page and comparisons read these keys."""

from typing import Any

from runs.lab.benchmark.results import SysbenchReport
from runs.lab.parse.sysbench import SysbenchSummary


def sysbench_metrics(report: SysbenchReport) -> dict[str, Any]:
    """What sysbench's summary says beyond the run's columns, and its histogram: (ms, count)."""
    summary = report.summary
    histogram = [[value, count] for value, count in report.histogram]
    if summary is None:
        return {"histogram": histogram}
    return {
        "qps": summary.qps,
        "reads_per_s": _rate(summary.reads, summary),
        "writes_per_s": _rate(summary.writes, summary),
        "other_per_s": _rate(summary.other, summary),
        "errors_per_s": summary.errors_per_s,
        "reconnects_per_s": summary.reconnects_per_s,
        "transactions": summary.transactions,
        "queries": summary.queries,
        "latency_min_ms": summary.latency_min_ms,
        "latency_max_ms": summary.latency_max_ms,
        "histogram": histogram,
    }


def _rate(count: int, summary: SysbenchSummary) -> float | None:
    """A count a second over sysbench's own measured time (queries / qps: after the warm-up's reset)."""
    return round(count * summary.qps / summary.queries, 2) if summary.queries else None
