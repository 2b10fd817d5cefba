"""All the uploaded files of one pgbench run read together into what an imported run stores
(issue 35). No Django: runs.imports.services.run_import stores it."""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from runs.imports.parse import ImportFileError, UploadedText, read_report
from runs.imports.parse_logs import read_aggregate_logs, read_transaction_logs
from runs.lab.parse.pgbench import ProgressSample
from runs.lab.parse.pgbench_logs import AggregateInterval
from runs.lab.parse.pgbench_summary import PgbenchSummary
from runs.lab.pgbench.latency import LatencyPercentiles

# Progress stamped with --progress-timestamp: Unix times, not seconds since the start.
_EPOCH_FLOOR = 1_000_000_000


@dataclass(frozen=True)
class ImportedOutput:
    summary: PgbenchSummary | None
    samples: tuple[tuple[int, ProgressSample], ...]  # (second since the start, its progress line)
    latency: LatencyPercentiles | None
    aggregate: tuple[AggregateInterval, ...]
    duration_s: int
    tps: float | None  # the summary's (without connection time), else the progress lines' mean
    latency_avg_ms: float | None
    latency_stddev_ms: float | None

    @property
    def pgbench_version(self) -> str | None:
        """As its banner said (pgbench 14+ prints one: "17.10, server 15.20 (…)")."""
        return self.summary.pgbench_version if self.summary else None


def _seconds(progress: Sequence[ProgressSample]) -> tuple[tuple[int, ProgressSample], ...]:
    if progress and progress[0].elapsed_s >= _EPOCH_FLOOR:  # each line reports the second that ended then
        start = progress[0].elapsed_s - 1
        return tuple((round(p.elapsed_s - start), p) for p in progress)
    return tuple((round(p.elapsed_s), p) for p in progress)


def _duration(summary: PgbenchSummary | None, samples: Sequence[tuple[int, ProgressSample]], names: str) -> int:
    """The report's duration (-T), else the progress lines' last second, else, for a -t run's
    report alone, the time its transactions took at its tps (at least a second)."""
    if summary is not None and summary.duration_s is not None:
        return summary.duration_s
    if samples:
        return samples[-1][0]
    tps = summary.comparable_tps if summary is not None else None
    if summary is not None and summary.transactions_processed and tps:
        return max(1, round(summary.transactions_processed / tps))
    raise ImportFileError(
        names,
        0,
        "no duration: the report has no 'duration: <s> s' line, no transactions processed at a "
        "tps to time a -t run by, and there are no progress lines (-P) to count the seconds",
    )


def read_pgbench_output(
    reports: Sequence[UploadedText],
    transaction_logs: Sequence[UploadedText] = (),
    aggregate_logs: Sequence[UploadedText] = (),
    sampling_rate: float = 1.0,
) -> ImportedOutput:
    """Every file checked line by line (ImportFileError at the first bad one), then combined."""
    names = ", ".join(upload.name for upload in reports) or "the report"
    report = read_report(reports)
    summary, progress = report.summary, report.progress
    if summary is None and not progress:
        raise ImportFileError(
            names,
            0,
            "neither pgbench's report (its summary, stdout) nor progress lines (-P, "
            "stderr): upload at least one of them",
        )
    samples = _seconds(progress)
    if summary is not None:
        tps, latency_avg, latency_sd = summary.comparable_tps, summary.latency_avg_ms, summary.latency_stddev_ms
    else:  # equal seconds: the mean of the seconds, latency weighted by each one's transactions
        tps = statistics.fmean(p.tps for p in progress)
        weighted = [(p.latency_ms, p.tps) for p in progress if p.latency_ms is not None and p.tps]
        total = sum(weight for _, weight in weighted)
        latency_avg = sum(ms * weight for ms, weight in weighted) / total if total else None
        latency_sd = None
    return ImportedOutput(
        summary=summary,
        samples=samples,
        latency=read_transaction_logs(transaction_logs, sampling_rate) if transaction_logs else None,
        aggregate=tuple(read_aggregate_logs(aggregate_logs)) if aggregate_logs else (),
        duration_s=_duration(summary, samples, names),
        tps=tps,
        latency_avg_ms=latency_avg,
        latency_stddev_ms=latency_sd,
    )
