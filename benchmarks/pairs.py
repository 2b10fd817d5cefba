"""Interleaved A/B pairs: which side goes first in each pair, what the pairs' ratios say, and
what each side's processes cost.

Machine noise (another lab on the same cores, the page cache, a checkpoint elsewhere) drifts
slowly; measuring A and B back to back and alternating which goes first puts the drift into
both sides of each pair alike, and the ratio of each pair cancels most of it. The summary is
nearest-rank, as everywhere in benchlab: with an odd number of pairs the median and quartiles
are pairs' own ratios; with an even number the lower middle (the cautious side of a ≥ target).

What drift does not cancel is the order within a pair: on this machine the run that goes first
in a pair was about 2 % faster on the RAM disk, whichever side it was (7 pairs, 24 Nov 2026:
benchlab/direct 1.062, 1.007, 0.986, 1.011 with benchlab first; 0.975, 0.985, 0.964 with direct
first). The plain median of the ratios then leans towards the order that had more pairs, or
lands on either group's edge. The alternating order makes this a crossover design, whose
estimate takes the order out: the geometric mean of the median ratio of the pairs run one way
round and that of the pairs run the other way (order_balanced_ratio; an even number of pairs
balances the two). The verdict reads it whenever both orders were run.
"""

import math
import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.machine import percentile


def pair_order(index: int, sides: tuple[str, str]) -> tuple[str, str]:
    """Pair 0 runs sides[0] first, pair 1 sides[1] first, and so on."""
    return sides if index % 2 == 0 else (sides[1], sides[0])


def ratio_summary(ratios: Sequence[float], target: float, firsts: Sequence[str] = ()) -> dict[str, Any]:
    """The median ratio with its spread (min to max and the interquartile range); with `firsts`
    (which side ran first in each pair), the order-balanced ratio too. Whether the ratio meets
    the target (at least `target`): the order-balanced one when both orders were run, else the
    median."""
    if not ratios:
        raise ValueError("no pairs to summarise")
    values = list(ratios)
    median = percentile(values, 0.5)
    q1, q3 = percentile(values, 0.25), percentile(values, 0.75)
    summary: dict[str, Any] = {
        "pairs": len(values),
        "median_ratio": median,
        "min_ratio": min(values),
        "max_ratio": max(values),
        "q1_ratio": q1,
        "q3_ratio": q3,
        "iqr": q3 - q1,
        "target_ratio": target,
    }
    by_first = median_ratio_by_first(values, firsts)
    if len(by_first) == 2:
        summary["median_ratio_by_first"] = by_first
        summary["order_balanced_ratio"] = math.sqrt(math.prod(by_first.values()))
    summary["verdict_ratio"] = summary.get("order_balanced_ratio", median)
    summary["meets"] = summary["verdict_ratio"] >= target
    return summary


def median_ratio_by_first(ratios: Sequence[float], firsts: Sequence[str]) -> dict[str, float]:
    """The median ratio of the pairs each side went first in (nothing without `firsts`)."""
    if firsts and len(firsts) != len(ratios):
        raise ValueError("say which side went first in every pair, or in none")
    grouped: dict[str, list[float]] = {}
    for ratio, first in zip(ratios, firsts, strict=False):
        grouped.setdefault(first, []).append(ratio)
    return {first: percentile(group, 0.5) for first, group in grouped.items()}


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
