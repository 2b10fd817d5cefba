"""Pure parsers for pgbench's output: text in, frozen dataclasses out. No I/O, no Django.
This module reads the per-second progress lines and holds what the others share;
parse_pgbench_summary reads the final report (and -i's), parse_pgbench_logs the aggregate logs.

Formats are those of pgbench 15 (what the lab runs) and, where they differ, older pgbench
(8.4 to 13: `tps = … (including/excluding connections establishing)`, no failed/retry fields,
6/10/11-field aggregate logs). Each format is pinned by a real captured fixture under
runs/tests/fixtures/. Lines a parser does not know are skipped, never fatal: a new pgbench or
sysstat field must not lose a run.
"""

import math
import re
from dataclasses import dataclass
from typing import Any

NUMBER = r"-?(?:\d+(?:\.\d+)?|nan|NaN|inf)"


def pgbench_float(text: str) -> float | None:
    """A number as pgbench prints it; None for NaN (e.g. a percentage of zero transactions)."""
    value = float(text)
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class ProgressSample:
    """One `progress:` line. Counts are per reporting interval; fields a pgbench version or the
    run's options do not print are None (failed before 15, lag without -R, …)."""

    elapsed_s: float  # seconds since start, or a Unix epoch with --progress-timestamp
    tps: float
    latency_ms: float | None  # the mean; None from a driver that prints none (sysbench)
    latency_stddev_ms: float | None = None
    failed: int | None = None
    retried: int | None = None
    retries: int | None = None
    lag_ms: float | None = None
    skipped: int | None = None
    qps: float | None = None  # statements a second (sysbench)
    latency_p95_ms: float | None = None  # the second's 95th percentile (sysbench prints it instead of a mean)


_PROGRESS_HEAD = re.compile(rf"^progress: ({NUMBER}) s, ({NUMBER}) tps, lat ({NUMBER}) ms(?: stddev ({NUMBER}))?$")
_PROGRESS_PARTS = {
    "failed": re.compile(r"^(\d+) failed$"),
    "retried": re.compile(r"^(\d+) retried$"),
    "retries": re.compile(r"^(\d+) retries$"),
    "lag_ms": re.compile(rf"^lag ({NUMBER}) ms$"),
    "skipped": re.compile(r"^(\d+) skipped$"),
}


def parse_progress_line(line: str) -> ProgressSample | None:
    """The sample on a pgbench `progress:` line, or None for any other line."""
    parts = line.strip().split(", ")
    match = _PROGRESS_HEAD.match(", ".join(parts[:3]))
    if match is None:
        return None
    extra: dict[str, Any] = {}
    for part in parts[3:]:  # their order changed across versions; unknown ones are ignored
        for name, pattern in _PROGRESS_PARTS.items():
            if found := pattern.match(part):
                extra[name] = float(found[1]) if name == "lag_ms" else int(found[1])
    stddev = match[4]
    return ProgressSample(
        elapsed_s=float(match[1]),
        tps=float(match[2]),
        latency_ms=float(match[3]),
        latency_stddev_ms=float(stddev) if stddev is not None else None,
        **extra,
    )
