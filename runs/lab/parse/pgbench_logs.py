"""pgbench's --aggregate-interval logs, one per thread, and their merge into one series
for the run. Pure: text in, frozen dataclasses out."""

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AggregateInterval:
    """One aggregate-log line (µs), or several merged. pgbench 15+ prints every column and
    writes 0 where an option was off (lag without -R, skipped without -L, retries with
    --max-tries=1, failure kinds without --failures-detailed). Older pgbench printed 6, 10
    (with -R) or 11 (with -R and -L) columns; the missing ones are None here."""

    start_epoch: int
    count: int  # transactions reported in the interval
    latency_count: int  # how many the latency sums cover (before 15, count included skipped ones)
    latency_sum_us: float
    latency_sum2_us2: float
    latency_min_us: float
    latency_max_us: float
    lag_sum_us: float | None = None
    lag_sum2_us2: float | None = None
    lag_min_us: float | None = None
    lag_max_us: float | None = None
    skipped: int | None = None
    retried: int | None = None
    retries: int | None = None
    serialization_failures: int | None = None
    deadlock_failures: int | None = None
    other_sql_failures: int | None = None

    @property
    def latency_mean_ms(self) -> float | None:
        return _mean_ms(self.latency_sum_us, self.latency_count)

    @property
    def latency_stddev_ms(self) -> float | None:
        return _stddev_ms(self.latency_sum_us, self.latency_sum2_us2, self.latency_count)

    @property
    def lag_mean_ms(self) -> float | None:
        return None if self.lag_sum_us is None else _mean_ms(self.lag_sum_us, self.latency_count)


def _mean_ms(total_us: float, count: int) -> float | None:
    return total_us / count / 1000 if count else None


def _stddev_ms(total_us: float, total2_us2: float, count: int) -> float | None:
    """Population standard deviation from the sums, as pgbench itself computes it."""
    if not count:
        return None
    mean = total_us / count
    return math.sqrt(max(total2_us2 / count - mean * mean, 0.0)) / 1000


def parse_aggregate_line(line: str) -> AggregateInterval:
    """One line of a `--aggregate-interval` log; ValueError if it is not one."""
    parts = line.split()
    if len(parts) not in (6, 10, 11, 15, 16):
        raise ValueError(f"not a pgbench aggregate log line ({len(parts)} fields): {line!r}")
    count, number = int(parts[1]), [float(p) for p in parts]
    lag: list[float | None] = list(number[6:10]) if len(parts) >= 10 else [None] * 4
    skipped = int(parts[10]) if len(parts) >= 11 else None
    # pgbench 15+ has fixed columns (a 16th, other SQL failures, in newer releases); before 15
    # the count included skipped transactions, which have no latency.
    modern: list[int | None] = [int(p) for p in parts[11:]] + [None] * (16 - len(parts))
    if len(parts) < 15:
        modern = [None] * 5
    return AggregateInterval(
        start_epoch=int(parts[0]),
        count=count,
        latency_count=count if len(parts) >= 15 else count - (skipped or 0),
        latency_sum_us=number[2],
        latency_sum2_us2=number[3],
        latency_min_us=number[4],
        latency_max_us=number[5],
        lag_sum_us=lag[0],
        lag_sum2_us2=lag[1],
        lag_min_us=lag[2],
        lag_max_us=lag[3],
        skipped=skipped,
        retried=modern[0],
        retries=modern[1],
        serialization_failures=modern[2],
        deadlock_failures=modern[3],
        other_sql_failures=modern[4],
    )


def parse_aggregate_log(text: str) -> list[AggregateInterval]:
    """Every well-formed line; a truncated or unexpected one is logged and skipped, so that
    one bad line does not cost a finished run its results."""
    intervals = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            intervals.append(parse_aggregate_line(line))
        except ValueError:
            log.warning("skipped an aggregate log line pgbench should not have written: %r", line[:200])
    return intervals


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _add_int(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _merge_pair(a: AggregateInterval, b: AggregateInterval) -> AggregateInterval:
    # An interval without transactions prints min = max = 0; it must not win the minimum.
    if not a.latency_count:
        a, b = b, a
    if not b.latency_count:
        latency_min, latency_max, lag_min, lag_max = a.latency_min_us, a.latency_max_us, a.lag_min_us, a.lag_max_us
    else:
        latency_min = min(a.latency_min_us, b.latency_min_us)
        latency_max = max(a.latency_max_us, b.latency_max_us)
        lag_min = None if a.lag_min_us is None or b.lag_min_us is None else min(a.lag_min_us, b.lag_min_us)
        lag_max = None if a.lag_max_us is None or b.lag_max_us is None else max(a.lag_max_us, b.lag_max_us)
    return AggregateInterval(
        start_epoch=min(a.start_epoch, b.start_epoch),
        count=a.count + b.count,
        latency_count=a.latency_count + b.latency_count,
        latency_sum_us=a.latency_sum_us + b.latency_sum_us,
        latency_sum2_us2=a.latency_sum2_us2 + b.latency_sum2_us2,
        latency_min_us=latency_min,
        latency_max_us=latency_max,
        lag_sum_us=_add(a.lag_sum_us, b.lag_sum_us),
        lag_sum2_us2=_add(a.lag_sum2_us2, b.lag_sum2_us2),
        lag_min_us=lag_min,
        lag_max_us=lag_max,
        skipped=_add_int(a.skipped, b.skipped),
        retried=_add_int(a.retried, b.retried),
        retries=_add_int(a.retries, b.retries),
        serialization_failures=_add_int(a.serialization_failures, b.serialization_failures),
        deadlock_failures=_add_int(a.deadlock_failures, b.deadlock_failures),
        other_sql_failures=_add_int(a.other_sql_failures, b.other_sql_failures),
    )


def merge_aggregate_intervals(*thread_logs: Iterable[AggregateInterval]) -> list[AggregateInterval]:
    """One series for the whole run from the per-thread logs: intervals with the same start are
    summed (counts and sums added, min of minimums, max of maximums), ordered by start."""
    by_start: dict[int, AggregateInterval] = {}
    for log in thread_logs:
        for interval in log:
            seen = by_start.get(interval.start_epoch)
            by_start[interval.start_epoch] = interval if seen is None else _merge_pair(seen, interval)
    return [by_start[start] for start in sorted(by_start)]
