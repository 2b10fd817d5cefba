"""Pure parsers for pgbench's output: text in, frozen dataclasses out. No I/O, no Django.

Formats are those of pgbench 15 (what the lab runs) and, where they differ, older pgbench
(8.4 to 13: `tps = … (including/excluding connections establishing)`, no failed/retry fields,
6/10/11-field aggregate logs). Each format is pinned by a real captured fixture under
runs/tests/fixtures/. Lines a parser does not know are skipped, never fatal: a new pgbench or
sysstat field must not lose a run.
"""

import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

log = logging.getLogger(__name__)

_NUM = r"-?(?:\d+(?:\.\d+)?|nan|NaN|inf)"


def _float(text: str) -> float | None:
    """A number as pgbench prints it; None for NaN (e.g. a percentage of zero transactions)."""
    value = float(text)
    return None if math.isnan(value) else value


# --- pgbench progress lines (stderr) -----------------------------------------------------------


@dataclass(frozen=True)
class ProgressSample:
    """One `progress:` line. Counts are per reporting interval; fields a pgbench version or the
    run's options do not print are None (failed before 15, lag without -R, …)."""

    elapsed_s: float  # seconds since start, or a Unix epoch with --progress-timestamp
    tps: float
    latency_ms: float
    latency_stddev_ms: float | None = None
    failed: int | None = None
    retried: int | None = None
    retries: int | None = None
    lag_ms: float | None = None
    skipped: int | None = None


_PROGRESS_HEAD = re.compile(rf"^progress: ({_NUM}) s, ({_NUM}) tps, lat ({_NUM}) ms(?: stddev ({_NUM}))?$")
_PROGRESS_PARTS = {
    "failed": re.compile(r"^(\d+) failed$"),
    "retried": re.compile(r"^(\d+) retried$"),
    "retries": re.compile(r"^(\d+) retries$"),
    "lag_ms": re.compile(rf"^lag ({_NUM}) ms$"),
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


# --- pgbench summary (stdout; "Run was aborted" on stderr) ---------------------------------------


@dataclass(frozen=True)
class PgbenchSummary:
    """Every field of pgbench's final report. None means the line was not printed: the option
    was off, the pgbench version predates it, or the run was aborted before it was reached."""

    pgbench_version: str | None = None
    transaction_type: str | None = None
    scaling_factor: int | None = None
    partition_method: str | None = None
    partitions: int | None = None
    query_mode: str | None = None
    clients: int | None = None
    threads: int | None = None
    max_tries: int | None = None
    duration_s: int | None = None
    transactions_per_client: int | None = None
    transactions_processed: int | None = None
    transactions_planned: int | None = None  # the M of "N/M" under -t
    failed: int | None = None
    failed_pct: float | None = None
    serialization_failures: int | None = None
    serialization_failures_pct: float | None = None
    deadlock_failures: int | None = None
    deadlock_failures_pct: float | None = None
    retried: int | None = None
    retried_pct: float | None = None
    total_retries: int | None = None
    skipped: int | None = None
    skipped_pct: float | None = None
    latency_limit_ms: float | None = None
    above_latency_limit: int | None = None
    above_latency_limit_pct: float | None = None
    latency_avg_ms: float | None = None
    latency_avg_includes_failures: bool = False
    latency_stddev_ms: float | None = None
    lag_avg_ms: float | None = None
    lag_max_ms: float | None = None
    initial_connection_time_ms: float | None = None
    average_connection_time_ms: float | None = None  # -C (pgbench 14+)
    tps: float | None = None  # pgbench 14+: the one tps line
    tps_note: str | None = None  # its parenthesis: "without initial connection time" or, with -C, reconnections
    tps_including_connections: float | None = None  # pgbench before 14
    tps_excluding_connections: float | None = None  # pgbench before 14
    aborted: bool = False
    errors: tuple[str, ...] = ()

    @property
    def comparable_tps(self) -> float | None:
        """Throughput without connection set-up, across pgbench versions."""
        return self.tps if self.tps is not None else self.tps_excluding_connections


_PCT = rf"\(({_NUM}) ?%\)"
# Anchored at column 0: per-script blocks repeat some lines as " - number of failed …".
_SUMMARY_LINES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"^pgbench \((.+)\)$"), ("pgbench_version",)),
    (re.compile(r"^transaction type: (.+)$"), ("transaction_type",)),
    (re.compile(r"^scaling factor: (\d+)$"), ("scaling_factor",)),
    (re.compile(r"^partition method: (\S+)$"), ("partition_method",)),
    (re.compile(r"^partitions: (\d+)$"), ("partitions",)),
    (re.compile(r"^query mode: (\S+)$"), ("query_mode",)),
    (re.compile(r"^number of clients: (\d+)$"), ("clients",)),
    (re.compile(r"^number of threads: (\d+)$"), ("threads",)),
    (re.compile(r"^maximum number of tries: (\d+)$"), ("max_tries",)),
    (re.compile(r"^duration: (\d+) s$"), ("duration_s",)),
    (re.compile(r"^number of transactions per client: (\d+)$"), ("transactions_per_client",)),
    (
        re.compile(r"^number of transactions actually processed: (\d+)(?:/(\d+))?$"),
        ("transactions_processed", "transactions_planned"),
    ),
    (re.compile(rf"^number of failed transactions: (\d+) {_PCT}$"), ("failed", "failed_pct")),
    (
        re.compile(rf"^number of serialization failures: (\d+) {_PCT}$"),
        ("serialization_failures", "serialization_failures_pct"),
    ),
    (re.compile(rf"^number of deadlock failures: (\d+) {_PCT}$"), ("deadlock_failures", "deadlock_failures_pct")),
    (re.compile(rf"^number of transactions retried: (\d+) {_PCT}$"), ("retried", "retried_pct")),
    (re.compile(r"^total number of retries: (\d+)$"), ("total_retries",)),
    (re.compile(rf"^number of transactions skipped: (\d+) {_PCT}$"), ("skipped", "skipped_pct")),
    (
        re.compile(rf"^number of transactions above the ({_NUM}) ms latency limit: (\d+)(?:/\d+)? {_PCT}$"),
        ("latency_limit_ms", "above_latency_limit", "above_latency_limit_pct"),
    ),
    (re.compile(rf"^latency average(?: =|:) ({_NUM}) ms$"), ("latency_avg_ms",)),
    (re.compile(r"^latency stddev(?: =|:) " rf"({_NUM}) ms$"), ("latency_stddev_ms",)),
    (re.compile(rf"^rate limit schedule lag: avg ({_NUM}) \(max ({_NUM})\) ms$"), ("lag_avg_ms", "lag_max_ms")),
    (re.compile(rf"^initial connection time = ({_NUM}) ms$"), ("initial_connection_time_ms",)),
    (re.compile(rf"^average connection time = ({_NUM}) ms$"), ("average_connection_time_ms",)),
    (re.compile(rf"^tps = ({_NUM}) \(including connections establishing\)$"), ("tps_including_connections",)),
    (re.compile(rf"^tps = ({_NUM}) \(excluding connections establishing\)$"), ("tps_excluding_connections",)),
    (re.compile(rf"^tps = ({_NUM}) \((.+)\)$"), ("tps", "tps_note")),
]
_LATENCY_WITH_FAILURES = re.compile(rf"^latency average = ({_NUM}) ms \(including failures\)$")
_SUMMARY_TYPES = {f.name: f.type for f in fields(PgbenchSummary)}


def _summary_value(name: str, text: str | None) -> Any:
    if text is None:
        return None
    kind = _SUMMARY_TYPES[name]
    if kind == int | None:
        return int(text)
    if kind == float | None:
        return _float(text)
    return text


def parse_summary(stdout: str, stderr: str = "") -> PgbenchSummary:
    """The final report of one pgbench run. Anything missing stays None, so an aborted run
    still yields what was printed before it stopped."""
    values: dict[str, Any] = {}
    for line in stdout.splitlines():
        line = line.rstrip()
        if found := _LATENCY_WITH_FAILURES.match(line):
            values["latency_avg_ms"] = _float(found[1])
            values["latency_avg_includes_failures"] = True
            continue
        for pattern, names in _SUMMARY_LINES:
            if found := pattern.match(line):
                for name, text in zip(names, found.groups(), strict=True):
                    values[name] = _summary_value(name, text)
                break
    both = f"{stdout}\n{stderr}"
    values["aborted"] = "Run was aborted" in both
    values["errors"] = tuple(line.strip() for line in both.splitlines() if line.startswith("pgbench: error: "))
    return PgbenchSummary(**values)


# --- pgbench -i (stderr) ------------------------------------------------------------------------


@dataclass(frozen=True)
class InitProgress:
    tuples_done: int
    tuples_total: int
    percent: int
    elapsed_s: float
    remaining_s: float


@dataclass(frozen=True)
class InitDone:
    """pgbench 13+'s closing line of -i: the total and each step in the order it ran."""

    total_s: float
    steps: tuple[tuple[str, float], ...]

    def step_s(self, name: str) -> float | None:
        return next((seconds for step, seconds in self.steps if step == name), None)


_INIT_PROGRESS = re.compile(
    r"^(\d+) of (\d+) tuples \((\d+)%\) done \(elapsed (\d+(?:\.\d+)?) s, remaining (\d+(?:\.\d+)?) s\)$"
)
_INIT_DONE = re.compile(r"^done in (\d+(?:\.\d+)?) s \((.*)\)\.$", re.MULTILINE)
_INIT_STEP = re.compile(r"^(.+) (\d+(?:\.\d+)?) s$")


def parse_init_progress_line(line: str) -> InitProgress | None:
    # On a terminal pgbench ends these lines with \r instead of \n.
    match = _INIT_PROGRESS.match(line.strip("\r\n "))
    if match is None:
        return None
    return InitProgress(int(match[1]), int(match[2]), int(match[3]), float(match[4]), float(match[5]))


def parse_init_done(text: str) -> InitDone | None:
    """The "done in X s (step Y s, …)." line anywhere in the -i output; None before pgbench 13,
    which printed a bare "done."."""
    match = _INIT_DONE.search(text.replace("\r", "\n"))
    if match is None:
        return None
    steps = []
    for part in match[2].split(", "):
        if step := _INIT_STEP.match(part):
            steps.append((step[1], float(step[2])))
    return InitDone(total_s=float(match[1]), steps=tuple(steps))


# --- pgbench --aggregate-interval logs ----------------------------------------------------------


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

    @property
    def lag_stddev_ms(self) -> float | None:
        if self.lag_sum_us is None or self.lag_sum2_us2 is None:
            return None
        return _stddev_ms(self.lag_sum_us, self.lag_sum2_us2, self.latency_count)


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


def aggregate_total(intervals: Iterable[AggregateInterval]) -> AggregateInterval | None:
    """All intervals as one (start = the earliest): the run-wide exact mean and sd. None if empty."""
    total: AggregateInterval | None = None
    for interval in intervals:
        total = interval if total is None else _merge_pair(total, interval)
    return total
