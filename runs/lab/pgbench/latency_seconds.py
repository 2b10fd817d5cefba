"""Latency percentiles second by second, from pgbench's per-transaction logs (`-l`).

pgbench's progress lines and its aggregate log give each second's mean, sd, min and max, never
a percentile: those need the transactions themselves. As latency.py does for the whole window,
the logs are reduced on the host that ran pgbench (awk and sort) and a line a second comes back.

A transaction belongs to the second it ended in, counted from pgbench's start as its progress
lines count (the transactions that ended within (0, 1] s are second 1), so this series lines up
with the tps chart; the warm-up's seconds are kept and marked there. A skipped transaction
(-R with --latency-limit) ends when it was due. Late: completed above the latency limit, as
pgbench counts them ("number of transactions above the N ms latency limit"). With
--sampling-rate below 1 the counts are the sample's, the percentiles an estimate from it.
"""

from dataclasses import dataclass

from runs.lab.errors import LabError
from runs.lab.host.run_user import run_as_run_user
from runs.lab.pgbench.commands import LOG_PREFIX
from runs.lab.transport.interface import Transport

# Arguments: the log directory, the file with pgbench's start epoch, the latency limit in µs (0:
# none), the logs' prefix. A line out: second, completed, p50, p95, p99, max (µs), skipped, late.
_SCRIPT = r"""
set -e
cd "$1"
start=$(awk '{ printf "%.6f", $1 }' "$2")
cat "$4".* | awk -v start="$start" '
    {
        t = $5 + $6 / 1000000 - start
        s = int(t); if (s < t) s++
        if (s < 1) s = 1
        if ($3 ~ /^[0-9]+$/) print s, $3
        else if ($3 == "skipped") print s, -1
    }
' | LC_ALL=C sort -k1,1n -k2,2n | awk -v limit="$3" '
    function flush(   n) {
        n = count
        if (sec != "" && n) {
            printf "s %d %d %d %d %d", sec, n, v[rank(500, n)], v[rank(950, n)], v[rank(990, n)]
            printf " %d %d %d\n", v[n], skipped, late
        } else if (sec != "") printf "s %d 0 -1 -1 -1 -1 %d 0\n", sec, skipped
        count = 0; skipped = 0; late = 0
    }
    function rank(pm, n,   r) { r = int((pm * n + 999) / 1000); return r < 1 ? 1 : r }
    $1 != sec { flush(); sec = $1 }
    $2 < 0 { skipped++; next }
    { v[++count] = $2; if (limit > 0 && $2 > limit) late++ }
    END { flush() }
'
"""


@dataclass(frozen=True)
class LatencySecond:
    """One second of the run (ms; None for a second in which nothing completed)."""

    second: int
    completed: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    skipped: int
    late: int


def parse_latency_seconds(text: str) -> list[LatencySecond]:
    """The script's lines, in order of the second; LabError on a line it would not write."""
    seconds: list[LatencySecond] = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 9 or parts[0] != "s" or not all(p.lstrip("-").isdigit() for p in parts[1:]):
            raise LabError(f"the per-second latency summary has a line it should not: {line[:200]!r}")
        second, completed, skipped, late = (int(parts[i]) for i in (1, 2, 7, 8))
        p50, p95, p99, highest = (int(p) / 1000 if completed else None for p in parts[3:7])
        seconds.append(LatencySecond(second, completed, p50, p95, p99, highest, skipped, late))
    return seconds


def latency_seconds(
    transport: Transport, log_dir: str, started_file: str, latency_limit_ms: float | None
) -> list[LatencySecond]:
    """Each second's percentiles of the per-transaction logs in log_dir (started_file: pgbench's
    start epoch), computed as benchlab's unprivileged user, whose directory log_dir is."""
    limit_us = round(latency_limit_ms * 1000) if latency_limit_ms else 0
    argv = ["sh", "-c", _SCRIPT, "sh", log_dir, started_file, str(limit_us), LOG_PREFIX]
    return parse_latency_seconds(run_as_run_user(transport, argv, timeout=3600).stdout)
