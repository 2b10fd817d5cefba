"""Interleaved A/B pairs: which side goes first in each pair, what the pairs' ratios say, and
what each side's processes cost.

Machine noise (another lab on the same cores, the page cache, a checkpoint elsewhere) drifts
slowly; measuring A and B back to back and alternating which goes first puts the drift into
both sides of each pair alike, and the ratio of each pair cancels most of it. The summary is
nearest-rank, as everywhere in benchlab: with an odd number of pairs the median and quartiles
are pairs' own ratios; with an even number the lower middle (the cautious side of a ≥ target).
"""

import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.machine import percentile


def pair_order(index: int, sides: tuple[str, str]) -> tuple[str, str]:
    """Pair 0 runs sides[0] first, pair 1 sides[1] first, and so on."""
    return sides if index % 2 == 0 else (sides[1], sides[0])


def ratio_summary(ratios: Sequence[float], target: float) -> dict[str, Any]:
    """The median ratio with its spread (min to max and the interquartile range), and whether the
    median meets the target (a ratio at least `target`)."""
    if not ratios:
        raise ValueError("no pairs to summarise")
    values = list(ratios)
    median = percentile(values, 0.5)
    q1, q3 = percentile(values, 0.25), percentile(values, 0.75)
    return {
        "pairs": len(values),
        "median_ratio": median,
        "min_ratio": min(values),
        "max_ratio": max(values),
        "q1_ratio": q1,
        "q3_ratio": q3,
        "iqr": q3 - q1,
        "target_ratio": target,
        "meets": median >= target,
    }


# What benchlab adds around pgbench: its worker and database on this machine, and on the lab
# host its SSH sessions, follower, collectors and the short commands it runs ("lab other").
# Redis is left out: it is shared with whatever else runs on this machine.
HARNESS_GROUPS = ("worker", "benchlab database", "lab sshd", "lab tail", "lab iostat", "lab vmstat", "lab other")


def cpu_medians(pairs: Sequence[dict[str, Any]], sides: tuple[str, str]) -> dict[str, dict[str, float]]:
    """Each side's median CPU use per process group (pair[side]["cpu_pct"], % of one core while
    pgbench ran; a group a run did not see counts 0), and the machine's busy share (% of all cores)."""
    medians: dict[str, dict[str, float]] = {}
    for side in sides:
        runs = [pair[side] for pair in pairs]
        groups = sorted({group for run in runs for group in run["cpu_pct"]})
        medians[side] = {g: round(statistics.median(run["cpu_pct"].get(g, 0.0) for run in runs), 1) for g in groups}
        busy = statistics.median(run["machine_busy_pct"] for run in runs)
        medians[side]["machine busy (% of all cores)"] = round(busy, 1)
    return medians


def harness_cpu_pct(cpu: dict[str, dict[str, float]]) -> float:
    """benchlab's own CPU use while pgbench ran (% of one core): its processes' medians on the
    benchlab side less the same groups' on the direct side (an idle worker, the direct ssh)."""
    return round(sum(cpu["benchlab"].get(g, 0.0) - cpu["direct"].get(g, 0.0) for g in HARNESS_GROUPS), 2)
