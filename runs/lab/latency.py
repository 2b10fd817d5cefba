"""Latency percentiles from pgbench's per-transaction logs (`-l`, optionally `--sampling-rate`).

pgbench prints only the mean and sd; percentiles need every (sampled) transaction's latency.
A long run at a few thousand tps logs millions of lines, so the work is done on the host
that ran pgbench, with awk and sort, and only a dozen numbers come back.

Each log line is `client_id transaction_no latency_us script_no end_epoch end_us [lag_us] ...`;
the latency is `skipped` (-R with --latency-limit) or `failed` (errors with retries) for
transactions that never completed. Transactions ending inside the warm-up are left out, as
they are from the steady-state statistics. Percentiles use the nearest-rank method.
"""

from dataclasses import dataclass

from runs.lab.errors import LabError
from runs.lab.pgbench import LOG_PREFIX
from runs.lab.run_user import run_as_run_user
from runs.lab.transport import Transport

PERCENTILES_PER_MILLE = (500, 900, 950, 990, 999)  # p50 … p99.9, as integers so ranks are exact

_SCRIPT = r"""
set -e
cd "$1"
from=$(awk -v w="$2" '{ printf "%.6f", $1 + w }' "$3")
cat "$5".* | awk -v from="$from" '
    ($5 + $6 / 1000000) <= from { next }
    $3 ~ /^[0-9]+$/ { print $3; next }
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
