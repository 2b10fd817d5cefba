"""How noisy each configuration of a campaign is, and what it would take to resolve it: its
coefficient of variation, the confidence interval it has now, about how many repetitions
would bring that to a target (runs.compare.stats.repetitions_to_resolve), and, for a difference that
is within noise, how many would resolve that difference and the adaptive mode that does it.
"""

import math
from dataclasses import dataclass

from runs.campaigns.selectors.results import MetricTable
from runs.compare.stats import repetitions_to_resolve

DEFAULT_TARGET_PCT = 5.0  # when the campaign names none: a difference worth reporting in the seeds


@dataclass(frozen=True)
class NoiseAdvice:
    label: str
    text: str


@dataclass(frozen=True)
class WithinNoise:
    label: str
    difference_pct: float
    repetitions: int | None  # about how many each would resolve it; None: out of reach

    @property
    def difference_text(self) -> str:
        return f"{self.difference_pct:+.1f} %"


def _repetitions_text(repetitions: int | None, target: float) -> str:
    if repetitions is None:
        return f"more than 1000 repetitions would be needed to resolve ±{target:g} %"
    return f"about {repetitions} repetitions would resolve ±{target:g} %"


def noise_advice(table: MetricTable, target_pct: float | None) -> list[NoiseAdvice]:
    """Per configuration: its spread, and the repetitions a ±target % interval would take."""
    target = target_pct or DEFAULT_TARGET_PCT
    advice = []
    for row in table.rows:
        summary, label = row.summary, row.configuration.label
        if summary.cv is None:
            runs = f"{summary.n} finished run{'s' if summary.n != 1 else ''}"
            advice.append(NoiseAdvice(label, f"{runs}: too few to know its spread"))
            continue
        now = summary.ci_half_width_pct or 0.0
        spread = f"CV {summary.cv * 100:.1f} %, range {summary.range_pct or 0:.1f} % of the median, "
        spread += f"95 % CI ±{now:.1f} % with {summary.n} runs"
        if now <= target:
            advice.append(NoiseAdvice(label, f"{spread}: within ±{target:g} % already"))
        else:
            needed = _repetitions_text(repetitions_to_resolve(summary.cv, target), target)
            advice.append(NoiseAdvice(label, f"{spread}: {needed}"))
    return advice


def within_noise(table: MetricTable) -> list[WithinNoise]:
    """The configurations whose difference from the baseline is within noise, with about how
    many repetitions each would resolve a difference that size: the CI half-width of the
    difference of two means, t · √(sd² + sd_baseline²) / √n, brought below it."""
    baseline = next((row.summary for row in table.rows if row.comparison is None), None)
    found = []
    for row in table.rows:
        comparison, summary = row.comparison, row.summary
        if comparison is None or comparison.verdict != "within noise" or comparison.difference_pct is None:
            continue
        if baseline is None or not baseline.mean or summary.sd is None or baseline.sd is None:
            continue
        spread = math.sqrt(summary.sd**2 + baseline.sd**2) / abs(baseline.mean)  # of the difference, per run
        difference = abs(comparison.difference_pct)
        repetitions = repetitions_to_resolve(spread, difference) if difference > 0 else None
        found.append(WithinNoise(row.configuration.label, comparison.difference_pct, repetitions))
    return found
