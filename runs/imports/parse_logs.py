"""A strict reader of uploaded pgbench `-l` logs (issue 35): per-transaction logs, whose
latencies give the percentiles, and `--aggregate-interval` logs, merged across threads by the
lab's own merge. No Django. Every line is checked (runs.imports.parse says why)."""

from collections.abc import Sequence

from runs.imports.parse import ImportFileError, UploadedText
from runs.lab.parse.pgbench_logs import AggregateInterval, merge_aggregate_intervals, parse_aggregate_line
from runs.lab.pgbench.latency import PERCENTILES_PER_MILLE, LatencyPercentiles

# A Unix time after 2001-09-09: a log's epoch column, never a client id or an interval count.
_EPOCH_FLOOR = 1_000_000_000
# The latency column of a transaction that never completed (-R with --latency-limit; errors,
# pgbench 15+, with --failures-detailed naming the kind).
_NOT_COMPLETED = {"skipped": "skipped", "failed": "failed", "serialization": "failed", "deadlock": "failed"}
_TRANSACTION_FORMAT = "'client_id transaction_no latency_us script_no epoch_s epoch_us [lag_us] [retries]'"
_AGGREGATE_FORMAT = (
    "'interval_start count latency_sum latency_sum2 min max [lag_sum lag_sum2 lag_min lag_max [skipped …]]'"
)


def _shown(line: str) -> str:
    return repr(line if len(line) <= 120 else line[:117] + "...")


def _lines(upload: UploadedText) -> list[tuple[int, str]]:
    """The non-empty lines, numbered; a file that does not end with its newline was cut."""
    lines = upload.text.split("\n")
    if lines[-1] != "":
        raise ImportFileError(
            upload.name, len(lines), f"the file ends in the middle of a line ({_shown(lines[-1])}): it is cut short"
        )
    return [(n, line.rstrip("\r")) for n, line in enumerate(lines[:-1], start=1) if line.strip()]


def _transaction_latency(upload: UploadedText, number: int, line: str) -> int | str:
    """The line's latency in µs, or "skipped"/"failed"."""
    parts = line.split()
    fine = 6 <= len(parts) <= 8 and all(p.isdigit() for i, p in enumerate(parts) if i != 2)
    if fine and len(parts) >= 6 and int(parts[4]) < _EPOCH_FLOOR:
        fine = False
    if not fine:
        if len(parts) in (6, 10, 11, 15, 16) and parts[0].isdigit() and int(parts[0]) >= _EPOCH_FLOOR:
            problem = "this is an aggregate log line (--aggregate-interval): upload the file as an aggregate log"
            raise ImportFileError(upload.name, number, problem)
        raise ImportFileError(upload.name, number, f"expected {_TRANSACTION_FORMAT}, got {_shown(line)}")
    if parts[2].isdigit():
        return int(parts[2])
    if parts[2] in _NOT_COMPLETED:
        return _NOT_COMPLETED[parts[2]]
    raise ImportFileError(upload.name, number, f"the latency is {parts[2]!r}: expected µs, 'skipped' or 'failed'")


def _nearest_rank(ordered: Sequence[int], per_mille: int) -> int:
    """As the lab's awk does it (runs.lab.pgbench.latency): rank ceil(n·p), at least 1."""
    rank = max((per_mille * len(ordered) + 999) // 1000, 1)
    return ordered[rank - 1]


def read_transaction_logs(uploads: Sequence[UploadedText], sampling_rate: float) -> LatencyPercentiles:
    """Percentiles over every completed transaction in the logs (all threads' files together)."""
    latencies: list[int] = []
    counts = {"skipped": 0, "failed": 0}
    for upload in uploads:
        for number, line in _lines(upload):
            value = _transaction_latency(upload, number, line)
            if isinstance(value, str):
                counts[value] += 1
            else:
                latencies.append(value)
    latencies.sort()
    at = {pm: _nearest_rank(latencies, pm) / 1000 if latencies else None for pm in PERCENTILES_PER_MILLE}
    return LatencyPercentiles(
        count=len(latencies),
        sampling_rate=sampling_rate,
        mean_ms=sum(latencies) / len(latencies) / 1000 if latencies else None,
        min_ms=latencies[0] / 1000 if latencies else None,
        p50_ms=at[500],
        p90_ms=at[900],
        p95_ms=at[950],
        p99_ms=at[990],
        p999_ms=at[999],
        max_ms=latencies[-1] / 1000 if latencies else None,
        skipped=counts["skipped"],
        failed=counts["failed"],
    )


def read_aggregate_logs(uploads: Sequence[UploadedText]) -> list[AggregateInterval]:
    """Each thread's intervals, merged into one series for the run (summed by start)."""
    per_file: list[list[AggregateInterval]] = []
    for upload in uploads:
        intervals: list[AggregateInterval] = []
        columns = None
        for number, line in _lines(upload):
            parts = line.split()
            if len(parts) in (6, 7, 8) and parts[0].isdigit() and int(parts[0]) < _EPOCH_FLOOR:
                problem = "this is a per-transaction log line (-l without --aggregate-interval): upload it as one"
                raise ImportFileError(upload.name, number, problem)
            try:
                interval = parse_aggregate_line(line)
            except ValueError:
                raise ImportFileError(
                    upload.name, number, f"expected {_AGGREGATE_FORMAT}, got {_shown(line)}"
                ) from None
            if interval.start_epoch < _EPOCH_FLOOR:
                raise ImportFileError(upload.name, number, f"the interval start is not a Unix time: {_shown(line)}")
            if columns is not None and len(parts) != columns:
                problem = f"{len(parts)} columns where the lines before have {columns}: not one pgbench's log"
                raise ImportFileError(upload.name, number, problem)
            if intervals and interval.start_epoch <= intervals[-1].start_epoch:
                raise ImportFileError(upload.name, number, "the interval starts no later than the one before it")
            columns = len(parts)
            intervals.append(interval)
        per_file.append(intervals)
    return merge_aggregate_intervals(*per_file)
