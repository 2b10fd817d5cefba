"""Pure parsers for sysbench 1.0's output (all of it on stdout): the per-second report lines
(--report-interval=1), the final summary, and the latency histogram (--histogram=on), with
percentiles computed from the histogram's buckets. Formats are sysbench 1.0.20's, pinned by
real captured fixtures under runs/tests/fixtures/sysbench/. Lines a parser does not know are
skipped, never fatal.

A report checkpoint (--report-checkpoints, how benchlab cuts off a warm-up) prints a whole
summary in the middle of the output and resets the counters: the final summary is the last one.
"""

import math
import re
from dataclasses import dataclass

from runs.lab.parse.pgbench import ProgressSample

_N = r"(-?\d+(?:\.\d+)?)"
_REPORT = re.compile(
    rf"^\[ (\d+)s \] thds: (\d+) tps: {_N} qps: {_N} \(r/w/o: {_N}/{_N}/{_N}\) "
    rf"lat \(ms,(\d+)%\): {_N} err/s: {_N} reconn/s: {_N}$"
)


@dataclass(frozen=True)
class SysbenchSecond:
    """One `[ Ns ] thds: ...` line: rates over the last second, and a latency percentile."""

    second: int
    threads: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    percentile: int  # which percentile latency_ms is (--percentile, 95)
    latency_ms: float
    errors_per_s: float
    reconnects_per_s: float

    def as_sample(self) -> ProgressSample:
        """The second as the run's live series takes it: no mean latency (sysbench prints none)."""
        return ProgressSample(
            elapsed_s=float(self.second), tps=self.tps, latency_ms=None, qps=self.qps, latency_p95_ms=self.latency_ms
        )


def parse_report_line(line: str) -> SysbenchSecond | None:
    """The second on a sysbench report line, or None for any other line (the `queue length`
    line --rate adds, a checkpoint report, ...)."""
    found = _REPORT.match(line.strip())
    if found is None:
        return None
    g = found.groups()
    return SysbenchSecond(
        second=int(g[0]),
        threads=int(g[1]),
        tps=float(g[2]),
        qps=float(g[3]),
        reads_per_s=float(g[4]),
        writes_per_s=float(g[5]),
        other_per_s=float(g[6]),
        percentile=int(g[7]),
        latency_ms=float(g[8]),
        errors_per_s=float(g[9]),
        reconnects_per_s=float(g[10]),
    )


@dataclass(frozen=True)
class SysbenchSummary:
    """The final summary's figures (after the last report checkpoint, if any). Rates are sysbench's
    own: counts over the time since its counters were last reset."""

    reads: int
    writes: int
    other: int
    queries: int
    transactions: int
    tps: float
    qps: float
    errors: int
    errors_per_s: float
    reconnects: int
    reconnects_per_s: float
    total_time_s: float
    events: int
    latency_min_ms: float
    latency_avg_ms: float
    latency_max_ms: float
    latency_percentile_ms: float | None  # the --percentile line (95th); None with --percentile=0
    latency_sum_ms: float


_SUMMARY_LINES = {
    "reads": re.compile(r"^read:\s+(\d+)$"),
    "writes": re.compile(r"^write:\s+(\d+)$"),
    "other": re.compile(r"^other:\s+(\d+)$"),
    "queries": re.compile(r"^total:\s+(\d+)$"),
    "transactions": re.compile(rf"^transactions:\s+(\d+)\s+\({_N} per sec\.\)$"),
    "qps": re.compile(rf"^queries:\s+\d+\s+\({_N} per sec\.\)$"),
    "errors": re.compile(rf"^ignored errors:\s+(\d+)\s+\({_N} per sec\.\)$"),
    "reconnects": re.compile(rf"^reconnects:\s+(\d+)\s+\({_N} per sec\.\)$"),
    "total_time_s": re.compile(rf"^total time:\s+{_N}s$"),
    "events": re.compile(r"^total number of events:\s+(\d+)$"),
    "latency_min_ms": re.compile(rf"^min:\s+{_N}$"),
    "latency_avg_ms": re.compile(rf"^avg:\s+{_N}$"),
    "latency_max_ms": re.compile(rf"^max:\s+{_N}$"),
    "latency_percentile_ms": re.compile(rf"^\d+th percentile:\s+{_N}$"),
    "latency_sum_ms": re.compile(rf"^sum:\s+{_N}$"),
}
_WITH_RATE = {"transactions": "tps", "errors": "errors_per_s", "reconnects": "reconnects_per_s"}


def parse_summary(output: str) -> SysbenchSummary | None:
    """The last `SQL statistics:` block and what follows it; None if sysbench printed none (it
    failed before the end)."""
    start = output.rfind("SQL statistics:")
    if start < 0:
        return None
    values: dict[str, float | int | None] = {"latency_percentile_ms": None}
    for line in output[start:].splitlines():
        for name, pattern in _SUMMARY_LINES.items():
            if (found := pattern.match(line.strip())) is None:
                continue
            number = found[1]
            values[name] = float(number) if "." in number else int(number)
            if name in _WITH_RATE:
                values[_WITH_RATE[name]] = float(found[2])
            break
    try:
        return SysbenchSummary(**values)  # type: ignore[arg-type]  # each name matched its own type
    except TypeError:  # a line missing: a summary cut short
        return None


_BUCKET = re.compile(r"^\s*(\d+(?:\.\d+)?) \|\**\s+(\d+)$")


def parse_histogram(output: str) -> list[tuple[float, int]]:
    """The last latency histogram's buckets: (the bucket's value in ms, transactions), ascending."""
    start = output.rfind("Latency histogram (values are in milliseconds)")
    if start < 0:
        return []
    buckets = []
    for line in output[start:].splitlines()[2:]:
        found = _BUCKET.match(line)
        if found is None:
            break  # the blank line after the last bucket
        buckets.append((float(found[1]), int(found[2])))
    return buckets


def histogram_percentile(
    buckets: list[tuple[float, int]], percentile: float, at_most: float | None = None
) -> float | None:
    """The smallest bucket value at or below which `percentile` % of the transactions lie (as
    sysbench computes its own --percentile), and never above `at_most`, the largest latency seen:
    the buckets are spaced logarithmically, and the last one's value may lie above it (a p99 of
    1013.6 ms beside a maximum of 1008.4 ms in CI). None for an empty histogram."""
    total = sum(count for _, count in buckets)
    if total == 0:
        return None
    wanted = math.ceil(total * percentile / 100)
    seen, found = 0, buckets[-1][0]
    for value, count in buckets:
        seen += count
        if seen >= wanted:
            found = value
            break
    return found if at_most is None else min(found, at_most)
