"""pgbench's final report (stdout; "Run was aborted" on stderr) and the closing line of
`pgbench -i`, for pgbench 15 and older (runs/lab/parse/pgbench.py says which formats).
Pure: text in, frozen dataclasses out."""

import re
from dataclasses import dataclass, fields
from typing import Any

from runs.lab.parse.pgbench import NUMBER, pgbench_float


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


_PCT = rf"\(({NUMBER}) ?%\)"
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
        re.compile(rf"^number of transactions above the ({NUMBER}) ms latency limit: (\d+)(?:/\d+)? {_PCT}$"),
        ("latency_limit_ms", "above_latency_limit", "above_latency_limit_pct"),
    ),
    (re.compile(rf"^latency average(?: =|:) ({NUMBER}) ms$"), ("latency_avg_ms",)),
    (re.compile(r"^latency stddev(?: =|:) " rf"({NUMBER}) ms$"), ("latency_stddev_ms",)),
    (re.compile(rf"^rate limit schedule lag: avg ({NUMBER}) \(max ({NUMBER})\) ms$"), ("lag_avg_ms", "lag_max_ms")),
    (re.compile(rf"^initial connection time = ({NUMBER}) ms$"), ("initial_connection_time_ms",)),
    (re.compile(rf"^average connection time = ({NUMBER}) ms$"), ("average_connection_time_ms",)),
    (re.compile(rf"^tps = ({NUMBER}) \(including connections establishing\)$"), ("tps_including_connections",)),
    (re.compile(rf"^tps = ({NUMBER}) \(excluding connections establishing\)$"), ("tps_excluding_connections",)),
    (re.compile(rf"^tps = ({NUMBER}) \((.+)\)$"), ("tps", "tps_note")),
]
_LATENCY_WITH_FAILURES = re.compile(rf"^latency average = ({NUMBER}) ms \(including failures\)$")
_SUMMARY_TYPES = {f.name: f.type for f in fields(PgbenchSummary)}


def is_summary_line(line: str) -> bool:
    """Whether the line is one of the report's own lines that parse_summary reads (a strict
    reader, runs.imports.parse, tells them from lines it must refuse)."""
    line = line.rstrip()
    return bool(_LATENCY_WITH_FAILURES.match(line)) or any(pattern.match(line) for pattern, _ in _SUMMARY_LINES)


def _summary_value(name: str, text: str | None) -> Any:
    if text is None:
        return None
    kind = _SUMMARY_TYPES[name]
    if kind == int | None:
        return int(text)
    if kind == float | None:
        return pgbench_float(text)
    return text


def parse_summary(stdout: str, stderr: str = "") -> PgbenchSummary:
    """The final report of one pgbench run. Anything missing stays None, so an aborted run
    still yields what was printed before it stopped."""
    values: dict[str, Any] = {}
    for line in stdout.splitlines():
        line = line.rstrip()
        if found := _LATENCY_WITH_FAILURES.match(line):
            values["latency_avg_ms"] = pgbench_float(found[1])
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


@dataclass(frozen=True)
class InitDone:
    """pgbench 13+'s closing line of -i: the total and each step in the order it ran."""

    total_s: float
    steps: tuple[tuple[str, float], ...]


_INIT_DONE = re.compile(r"^done in (\d+(?:\.\d+)?) s \((.*)\)\.$", re.MULTILINE)
_INIT_STEP = re.compile(r"^(.+) (\d+(?:\.\d+)?) s$")


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
