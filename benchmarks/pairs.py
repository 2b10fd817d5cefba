"""Interleaved A/B pairs: which side goes first in each pair, what the pairs' ratios say, and
what each side's processes cost.

Machine noise (another lab on the same cores, the page cache, a checkpoint elsewhere) drifts
slowly; measuring A and B back to back and alternating which goes first puts the drift into
both sides of each pair alike, and the ratio of each pair cancels most of it. The summary is
nearest-rank, as everywhere in benchlab: with an odd number of pairs the median and quartiles
are pairs' own ratios; with an even number the lower middle (the cautious side of a ≥ target).

What drift does not cancel is the order within a pair: on this machine the run that went first
in a pair was once about 2 % faster on the RAM disk, whichever side it was (7 pairs, 24 Nov 2026:
benchlab/direct 1.062, 1.007, 0.986, 1.011 with benchlab first; 0.975, 0.985, 0.964 with direct
first), and another time not at all. The alternating order makes this a two-period crossover
design, whose textbook estimate takes the order out: the mean log ratio of the pairs run one way
round and that of the pairs run the other way, averaged (crossover_estimate), with a Welch
t-interval (Student's t from runs/compare/stats.py). The verdict reads it whenever each order was run at
least twice; the interval says how finely the pairs resolve the ratio (on this VM two 20 s runs
scatter ±5 % even when quiet, from run to run rather than within a run, so longer runs do not
help and only more pairs do).

Why means of logs and not each order's median (the verdict of revision 7607c6d): with an even
number of pairs each way, the nearest-rank median is the lower middle one, which sits below the
middle by half the gap between the two middle pairs, 1-2 % here: more than the margin measured.
"""

import math
import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.machine import percentile
from runs.compare.stats import t_quantile


def pair_order(index: int, sides: tuple[str, str]) -> tuple[str, str]:
    """Pair 0 runs sides[0] first, pair 1 sides[1] first, and so on."""
    return sides if index % 2 == 0 else (sides[1], sides[0])


def ratio_summary(ratios: Sequence[float], target: float, firsts: Sequence[str] = ()) -> dict[str, Any]:
    """The median ratio with its spread (min to max and the interquartile range); with `firsts`
    (which side ran first in each pair), the crossover estimate and its 95 % interval too.
    Whether the ratio meets the target (at least `target`): the crossover estimate when each
    order was run at least twice, else the median; `resolved` when the whole interval does."""
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
    crossover = crossover_estimate(values, firsts)
    summary["verdict_ratio"], summary["resolved"] = median, False
    if crossover is not None:
        summary["crossover"], summary["verdict_ratio"] = crossover, crossover["ratio"]
        summary["resolved"] = crossover["low"] >= target
    summary["meets"] = summary["verdict_ratio"] >= target
    return summary


def crossover_estimate(
    ratios: Sequence[float], firsts: Sequence[str], confidence: float = 0.95
) -> dict[str, Any] | None:
    """The ratio with the order taken out, and its `confidence` interval: the mean of the two
    orders' mean log ratios, with a Welch t-interval (each order's variance of its own). None
    unless both orders were run at least twice (a group of one has no variance)."""
    if firsts and len(firsts) != len(ratios):
        raise ValueError("say which side went first in every pair, or in none")
    logs: dict[str, list[float]] = {}
    for ratio, first in zip(ratios, firsts, strict=False):
        logs.setdefault(first, []).append(math.log(ratio))
    if len(logs) != 2 or any(len(group) < 2 for group in logs.values()):
        return None
    means = {first: statistics.fmean(group) for first, group in logs.items()}
    variances = [statistics.variance(group) / len(group) for group in logs.values()]  # of each mean
    estimate = statistics.fmean(means.values())
    standard_error = math.sqrt(sum(variances)) / 2
    half_width = 0.0  # pairs that agree exactly leave no doubt
    if standard_error > 0:  # Welch-Satterthwaite degrees of freedom
        freedom = sum(variances) ** 2 / sum(v**2 / (len(g) - 1) for v, g in zip(variances, logs.values(), strict=True))
        half_width = t_quantile(freedom, confidence) * standard_error
    return {
        "ratio": math.exp(estimate),
        "low": math.exp(estimate - half_width),
        "high": math.exp(estimate + half_width),
        "confidence": confidence,
        "by_first": {first: math.exp(mean) for first, mean in means.items()},
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
