"""Latency percentiles from pgbench's per-transaction logs (`-l`, optionally `--sampling-rate`).

pgbench prints only the mean and sd; percentiles need every (sampled) transaction's latency.
A long run at a few thousand tps logs millions of lines, so the work is done on the host
that ran pgbench, with awk and sort, and only a dozen numbers come back.

Each log line is `client_id transaction_no latency_us script_no end_epoch end_us [lag_us] ...`;
the latency is `skipped` (-R with --latency-limit) or `failed` (errors with retries) for
transactions that never completed. Transactions ending inside the warm-up are left out, as
they are from the steady-state statistics. Percentiles use the nearest-rank method.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runs.lab.errors import LabError
from runs.lab.host.run_user import run_as_run_user
from runs.lab.pgbench.commands import LOG_PREFIX
from runs.lab.transport.interface import Transport

PERCENTILES_PER_MILLE = (500, 900, 950, 990, 999)  # p50 … p99.9, as integers so ranks are exact

# Arguments: the log directory, the warm-up seconds, the file with pgbench's start epoch, the
# percentiles wanted (per mille, comma-separated), the logs' prefix. Lines of transactions that
# ended in the warm-up are dropped before anything else sees them.
_MEASURED_LOG = r"""
set -e
cd "$1"
from=$(awk -v w="$2" '{ printf "%.6f", $1 + w }' "$3")
cat "$5".* | awk -v from="$from" '
    ($5 + $6 / 1000000) <= from { next }
"""

_SCRIPT = (
    _MEASURED_LOG
    + r"""    $3 ~ /^[0-9]+$/ { print $3; next }
    $3 == "skipped" { skipped++; next }
    { failed++ }
    END { printf "skipped %d\nfailed %d\n", skipped, failed > "latency.counts" }
' | LC_ALL=C sort -n > latency.sorted
awk -v n="$(wc -l < latency.sorted)" -v wanted="$4" '
    BEGIN {
        k = split(wanted, pm, ",")
        for (i = 1; i <= k; i++) {
            r = int((pm[i] * n + 999) / 1000)
            if (r < 1) r = 1
            rank[r] = rank[r] " " pm[i]
        }
    }
    NR == 1 { printf "min %d\n", $1 }
    { sum += $1 }
    NR in rank { c = split(rank[NR], names, " "); for (j = 1; j <= c; j++) printf "pm%s %d\n", names[j], $1 }
    END { printf "max %d\ncount %d\nsum %.0f\n", $1, n, sum }
' latency.sorted
cat latency.counts
rm -f latency.sorted latency.counts
"""
)


@dataclass(frozen=True)
class LatencyPercentiles:
    """Over the measured window (warm-up excluded), in milliseconds."""

    count: int  # completed transactions in the log (a sample when --sampling-rate < 1)
    sampling_rate: float
    mean_ms: float | None
    min_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    max_ms: float | None
    skipped: int  # logged transactions that were skipped (-R with --latency-limit)
    failed: int


def parse_percentile_output(text: str, sampling_rate: float) -> LatencyPercentiles:
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, number = line.partition(" ")
        if name and number.strip().lstrip("-").isdigit():
            values[name] = int(number)
    if "count" not in values:
        raise LabError(f"the latency summary is incomplete: {text.strip()[:200]!r}")
    count = values["count"]

    def ms(name: str) -> float | None:
        return values[name] / 1000 if count and name in values else None

    return LatencyPercentiles(
        count=count,
        sampling_rate=sampling_rate,
        mean_ms=values["sum"] / count / 1000 if count else None,
        min_ms=ms("min"),
        p50_ms=ms("pm500"),
        p90_ms=ms("pm900"),
        p95_ms=ms("pm950"),
        p99_ms=ms("pm990"),
        p999_ms=ms("pm999"),
        max_ms=ms("max"),
        skipped=values.get("skipped", 0),
        failed=values.get("failed", 0),
    )


def transaction_latency_percentiles(
    transport: Transport, log_dir: str, started_file: str, warmup_s: float, sampling_rate: float
) -> LatencyPercentiles:
    """Percentiles of the per-transaction logs in log_dir; started_file holds pgbench's start epoch.

    Computed as benchlab's unprivileged user, whose directory log_dir is (run_user.py)."""
    wanted = ",".join(str(pm) for pm in PERCENTILES_PER_MILLE)
    result = run_as_run_user(
        transport, ["sh", "-c", _SCRIPT, "sh", log_dir, f"{warmup_s:g}", started_file, wanted, LOG_PREFIX], timeout=3600
    )
    return parse_percentile_output(result.stdout, sampling_rate)


# Several client hosts' percentiles are taken over all their transactions together. Each host
# reduces its log to counts per latency rounded down to 4 significant digits (below 10 ms
# exact to the microsecond): at most some ten thousand lines whatever the run's length, and a
# merged percentile at most 0.1 % below the exact one.
_HISTOGRAM_SCRIPT = (
    _MEASURED_LOG
    + r"""    $3 ~ /^[0-9]+$/ {
        v = $3 + 0; sum += v; n++
        if (n == 1 || v < min) min = v
        if (v > max) max = v
        d = length($3)
        b = v
        if (d > 4) { p = 10 ^ (d - 4); b = int(v / p) * p }
        count[b]++
        next
    }
    $3 == "skipped" { skipped++; next }
    { failed++ }
    END {
        for (b in count) printf "b %d %d\n", b, count[b]
        printf "min %d\nmax %d\ncount %d\nsum %.0f\nskipped %d\nfailed %d\n", min, max, n, sum, skipped, failed
    }
'
"""
)


@dataclass(frozen=True)
class LatencyHistogram:
    """One host's transactions over the measured window: counts by latency bucket (µs, each
    bucket's lower bound), and the exact count, sum, min and max."""

    buckets: Mapping[int, int]
    count: int
    sum_us: int
    min_us: int | None
    max_us: int | None
    skipped: int
    failed: int


def parse_histogram_output(text: str) -> LatencyHistogram:
    buckets: dict[int, int] = {}
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "b" and parts[1].isdigit() and parts[2].isdigit():
            buckets[int(parts[1])] = buckets.get(int(parts[1]), 0) + int(parts[2])
        elif len(parts) == 2 and parts[1].lstrip("-").isdigit():
            values[parts[0]] = int(parts[1])
    if "count" not in values:
        raise LabError(f"the latency histogram is incomplete: {text.strip()[:200]!r}")
    count = values["count"]
    return LatencyHistogram(
        buckets=buckets,
        count=count,
        sum_us=values.get("sum", 0),
        min_us=values.get("min") if count else None,
        max_us=values.get("max") if count else None,
        skipped=values.get("skipped", 0),
        failed=values.get("failed", 0),
    )


def transaction_latency_histogram(
    transport: Transport, log_dir: str, started_file: str, warmup_s: float
) -> LatencyHistogram:
    """The histogram of the per-transaction logs in log_dir (as transaction_latency_percentiles)."""
    argv = ["sh", "-c", _HISTOGRAM_SCRIPT, "sh", log_dir, f"{warmup_s:g}", started_file, "", LOG_PREFIX]
    return parse_histogram_output(run_as_run_user(transport, argv, timeout=3600).stdout)


def merged_percentiles(histograms: Sequence[LatencyHistogram], sampling_rate: float) -> LatencyPercentiles:
    """Percentiles over every host's transactions together (nearest rank over the buckets;
    mean, min and max exact)."""
    buckets: dict[int, int] = {}
    for histogram in histograms:
        for bucket, count in histogram.buckets.items():
            buckets[bucket] = buckets.get(bucket, 0) + count
    count = sum(h.count for h in histograms)
    ranked = sorted(buckets.items())

    def at(per_mille: int) -> float | None:
        if not count:
            return None
        rank, seen = max(1, (per_mille * count + 999) // 1000), 0
        for bucket, bucket_count in ranked:
            seen += bucket_count
            if seen >= rank:
                return bucket / 1000
        return ranked[-1][0] / 1000

    mins = [h.min_us for h in histograms if h.min_us is not None]
    maxes = [h.max_us for h in histograms if h.max_us is not None]
    return LatencyPercentiles(
        count=count,
        sampling_rate=sampling_rate,
        mean_ms=sum(h.sum_us for h in histograms) / count / 1000 if count else None,
        min_ms=min(mins) / 1000 if mins else None,
        p50_ms=at(500),
        p90_ms=at(900),
        p95_ms=at(950),
        p99_ms=at(990),
        p999_ms=at(999),
        max_ms=max(maxes) / 1000 if maxes else None,
        skipped=sum(h.skipped for h in histograms),
        failed=sum(h.failed for h in histograms),
    )
