"""Several client hosts' pgbench figures made into the run's own: pure arithmetic, no host.

Throughput adds up. A mean latency is weighted by how many transactions it averages, and the
spread around the total mean pools each client's own spread with how far its mean lies from
the total's (the law of total variance), so two clients at 1 ms and 3 ms do not report a
total spread of zero.

Per-second progress: every client prints a line a second, counted from its own start, and the
clients start together (behind a barrier, start skew recorded): second s of the total is the
sum of every client's second s. It is handed on once every client still running has reported
that second, so the live chart lags the slowest client, never mixes seconds.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from runs.lab.parse.pgbench import ProgressSample
from runs.lab.parse.pgbench_summary import PgbenchSummary


def _weighted_mean(pairs: Sequence[tuple[float | None, float]]) -> float | None:
    known = [(value, weight) for value, weight in pairs if value is not None]
    total_weight = sum(weight for _, weight in known)
    if not known:
        return None
    if total_weight <= 0:
        return sum(value for value, _ in known) / len(known)
    return sum(value * weight for value, weight in known) / total_weight


def _pooled_stddev(parts: Sequence[tuple[float | None, float | None, float]]) -> float | None:
    """The standard deviation of the union of groups given each group's (mean, sd, count)."""
    known = [(m, s, n) for m, s, n in parts if m is not None and s is not None and n > 0]
    if not known or len(known) != len(parts):
        return None
    count = sum(n for _, _, n in known)
    mean = sum(m * n for m, _, n in known) / count
    variance = sum(n * (s * s + (m - mean) ** 2) for m, s, n in known) / count
    return math.sqrt(variance)


def _sum(values: Sequence[float | int | None]) -> float | int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def total_progress(samples: Sequence[ProgressSample]) -> ProgressSample:
    """The run's second from its clients' same second."""
    weights = [s.tps for s in samples]
    sums = {name: _sum([getattr(s, name) for s in samples]) for name in ("failed", "retried", "retries", "skipped")}
    return ProgressSample(
        elapsed_s=samples[0].elapsed_s,
        tps=sum(weights),
        latency_ms=_weighted_mean([(s.latency_ms, w) for s, w in zip(samples, weights, strict=True)]) or 0.0,
        latency_stddev_ms=_pooled_stddev(
            [(s.latency_ms, s.latency_stddev_ms, w) for s, w in zip(samples, weights, strict=True)]
        ),
        failed=sums["failed"],  # type: ignore[arg-type]
        retried=sums["retried"],  # type: ignore[arg-type]
        retries=sums["retries"],  # type: ignore[arg-type]
        lag_ms=_weighted_mean([(s.lag_ms, w) for s, w in zip(samples, weights, strict=True)]),
        skipped=sums["skipped"],  # type: ignore[arg-type]
    )


def total_summary(summaries: Sequence[PgbenchSummary]) -> PgbenchSummary:
    """The run's summary from its clients' summaries: counts and throughput summed, means
    weighted by transactions, the settings every client shares taken from the first."""
    first = summaries[0]
    counts = [float(s.transactions_processed or 0) for s in summaries]

    def total(name: str) -> float | int | None:
        return _sum([getattr(s, name) for s in summaries])

    def mean(name: str) -> float | None:
        return _weighted_mean([(getattr(s, name), n) for s, n in zip(summaries, counts, strict=True)])

    processed = total("transactions_processed")
    failed = total("failed")
    return PgbenchSummary(
        pgbench_version=first.pgbench_version,
        transaction_type=first.transaction_type,
        scaling_factor=first.scaling_factor,
        partition_method=first.partition_method,
        partitions=first.partitions,
        query_mode=first.query_mode,
        clients=total("clients"),  # type: ignore[arg-type]
        threads=total("threads"),  # type: ignore[arg-type]
        max_tries=first.max_tries,
        duration_s=first.duration_s,
        transactions_per_client=first.transactions_per_client,
        transactions_processed=processed,  # type: ignore[arg-type]
        transactions_planned=total("transactions_planned"),  # type: ignore[arg-type]
        failed=failed,  # type: ignore[arg-type]
        failed_pct=(100.0 * failed / (processed + failed)) if failed is not None and processed else None,
        skipped=total("skipped"),  # type: ignore[arg-type]
        latency_limit_ms=first.latency_limit_ms,
        above_latency_limit=total("above_latency_limit"),  # type: ignore[arg-type]
        latency_avg_ms=mean("latency_avg_ms"),
        latency_avg_includes_failures=any(s.latency_avg_includes_failures for s in summaries),
        latency_stddev_ms=_pooled_stddev(
            [(s.latency_avg_ms, s.latency_stddev_ms, n) for s, n in zip(summaries, counts, strict=True)]
        ),
        lag_avg_ms=mean("lag_avg_ms"),
        lag_max_ms=max((s.lag_max_ms for s in summaries if s.lag_max_ms is not None), default=None),
        initial_connection_time_ms=max(
            (s.initial_connection_time_ms for s in summaries if s.initial_connection_time_ms is not None), default=None
        ),
        tps=total("tps"),
        tps_note=first.tps_note,
        tps_including_connections=total("tps_including_connections"),
        tps_excluding_connections=total("tps_excluding_connections"),
        aborted=any(s.aborted for s in summaries),
        errors=tuple(error for s in summaries for error in s.errors),
    )


@dataclass
class ProgressTotals:
    """Collects the clients' per-second samples and hands on each second's total once every
    client still running has reported it (or has ended)."""

    clients: int
    _pending: dict[int, dict[int, ProgressSample]] = field(default_factory=dict)
    _ended: set[int] = field(default_factory=set)

    def add(self, client: int, sample: ProgressSample) -> list[ProgressSample]:
        self._pending.setdefault(round(sample.elapsed_s), {})[client] = sample
        return self._ready()

    def end(self, client: int) -> list[ProgressSample]:
        """The client's pgbench has ended: no second waits for it any more."""
        self._ended.add(client)
        return self._ready()

    def _ready(self) -> list[ProgressSample]:
        running = set(range(self.clients)) - self._ended
        ready = []
        for second in sorted(self._pending):
            reported = self._pending[second]
            if not running <= set(reported):
                break  # seconds are handed on in order
            samples = [reported[client] for client in sorted(reported)]
            ready.append(total_progress(samples))
            del self._pending[second]
        return ready
