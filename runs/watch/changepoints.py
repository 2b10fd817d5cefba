"""Change points: where a series of round means shifts for good, how much, and how sure that is.

Pure (numpy, scipy through runs.compare.stats, ruptures). Two steps, each doing what it is good at:

1. Candidates: binary segmentation (ruptures.Binseg, least squares) with a penalty of 2·s²·ln(n)
   per change, s the noise read robustly from the round-to-round differences:
   s = 1.4826·MAD(diff(x))/√2 (a difference of two independent rounds has √2 times their noise,
   and a step moves only one difference, so it does not inflate s as the series' own sd would).
2. A gate on each candidate: Welch's t-test between the segments on either side, with its size as
   a ratio of their means and Fieller's 95 % interval on that ratio (runs.compare.stats.compare,
   the comparison pages' own test). A candidate stays if p < ALPHA / K, K = n - 2·min_size + 1
   the places a change could have been put, and its size is at least MIN_CHANGE; the weakest
   failing one is dropped and its neighbours' segments re-tested merged, until every one left passes.

Why p < ALPHA / K: the candidate was put where the two sides differ most, so a test at 0.05 would
pass noise far more often than 5 %. The first change is one of K splits of the whole series, so by
Bonferroni noise alone passes its test at most ALPHA = 5 % of the time (fewer: neighbouring splits
are nearly the same test). Tuned on synthetic series like this lab's (3 % CV, seeded): a 5 % step
over 20 + 20 rounds is found 97 times in 100; noise alone is flagged 1 to 3.6 times in 100 over
10 to 100 rounds, 0 in 100 over 365 (runs/tests/watch/test_changepoints.py holds these).
(0.005 for every length, tried first, flagged 3.3 % of 40-round noise and found 40 % of 6 + 6 steps;
ALPHA / K flags 1 % and finds 59 %.)

Why ruptures: MongoDB's signal-processing-algorithms (E-Divisive) needs numpy < 2 and Apache
Otava pins numpy 2.2 and scipy < 1.17 besides heavy dependencies; ruptures needs only the numpy
and scipy benchlab already has, and is maintained.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from runs.compare.stats import compare

MIN_SIZE = 5  # rounds on each side of a change: fewer cannot give a mean worth testing
# Candidates are placed with segments this short, and kept only with MIN_SIZE rounds on each side:
# placed with MIN_SIZE itself, a change four rounds from the end was put a round early (all the
# search may do), tested as one, and stored at the wrong round before the fifth round showed it.
SEARCH_MIN_SIZE = 2
ALPHA = 0.05  # the false-alarm rate a series of noise alone is held to (see above)
MIN_CHANGE = 0.02  # 2 %: smaller shifts are this lab's noise between days, not a change worth a look
MAD_TO_SD = 1.4826  # MAD of a normal sample times this estimates its sd


@dataclass(frozen=True)
class ChangePoint:
    """A shift between round `before_index` and round `index` (indexes into the values given; the
    two are adjacent unless the rounds between had no value)."""

    index: int  # the first round after the change
    before_mean: float  # of the segment before (from the previous change point, or the start)
    after_mean: float
    change: float  # after / before - 1: +0.05 is 5 % higher
    change_low: float | None  # 95 % interval of `change` (Fieller); None when it is unbounded
    change_high: float | None
    p: float  # Welch's, between the two segments
    rounds_before: int  # rounds in the segment before
    rounds_after: int
    before_index: int  # the last round before the change


@dataclass(frozen=True)
class Detection:
    points: list[ChangePoint]
    reason: str = ""  # why no change point could be looked for ("" when the series was searched)


def _finite(values: Sequence[float | None]) -> tuple[npt.NDArray[np.float64], list[int]]:
    """The finite values and where each was in `values`: a round without a value is skipped."""
    kept = [(i, float(v)) for i, v in enumerate(values) if v is not None and math.isfinite(float(v))]
    return np.array([v for _, v in kept], dtype=np.float64), [i for i, _ in kept]


def noise_sd(x: npt.NDArray[np.float64]) -> float:
    """The rounds' noise, robust to steps; the differences' plain sd when over half of them are 0
    (a series mostly of repeated values, whose MAD is 0)."""
    diffs = np.diff(x)
    sigma = MAD_TO_SD * float(np.median(np.abs(diffs - np.median(diffs)))) / math.sqrt(2)
    return sigma if sigma > 0 else float(np.std(diffs)) / math.sqrt(2)


class _SquaredDeviations:
    """ruptures' least-squares cost ("l2") from running sums: O(1) a segment where ruptures' own
    CostL2 takes the segment's variance (O(n)), so a 365-round series is searched in about a
    millisecond instead of ten (the series page searches every metric). Same values: the sum of
    squared deviations from the segment's mean, Σx² - (Σx)²/n, over values centred on the
    series' mean so the subtraction loses no digits."""

    model = "l2_running_sums"
    min_size = 2

    def fit(self, signal: npt.NDArray[np.float64]) -> "_SquaredDeviations":
        self.signal = signal  # ruptures reads the series' length from it
        x = signal.reshape(-1) - float(signal.mean())
        self.sums = np.concatenate(([0.0], np.cumsum(x)))
        self.squares = np.concatenate(([0.0], np.cumsum(x * x)))
        return self

    def error(self, start: int, end: int) -> float:
        total = self.sums[end] - self.sums[start]
        return float(self.squares[end] - self.squares[start] - total * total / (end - start))


def _candidates(x: npt.NDArray[np.float64], min_size: int, sigma: float) -> list[int]:
    import ruptures  # type: ignore[import-untyped]  # imported when used: it pulls in scipy.signal and more

    class Cost(_SquaredDeviations, ruptures.base.BaseCost):
        pass

    penalty = 2 * sigma * sigma * math.log(len(x))
    search = ruptures.Binseg(custom_cost=Cost(), min_size=min_size, jump=1)
    ends = search.fit(x.reshape(-1, 1)).predict(pen=penalty)
    return [int(end) for end in ends[:-1]]  # ruptures ends the list with len(x)


def _tested(x: npt.NDArray[np.float64], bounds: list[int], k: int, positions: list[int]) -> ChangePoint:
    """The change at bounds[k] tested between its neighbouring segments."""
    start, at, end = bounds[k - 1], bounds[k], bounds[k + 1]
    before, after = x[start:at], x[at:end]
    found = compare(before.tolist(), {0: after.tolist()})[0]
    if found.welch_p is None:  # both sides constant: a step without noise is certain, its size exact
        mean_before, mean_after = float(before[0]), float(after[0])
        exact = mean_after / mean_before - 1 if mean_before else math.inf
        return ChangePoint(
            positions[at], mean_before, mean_after, exact, exact, exact, 0.0, len(before), len(after), positions[at - 1]
        )
    low = None if found.ratio_ci_low is None else found.ratio_ci_low - 1
    high = None if found.ratio_ci_high is None else found.ratio_ci_high - 1
    mean_before, mean_after = float(before.mean()), float(after.mean())
    change = mean_after / mean_before - 1 if mean_before else math.inf
    return ChangePoint(
        positions[at],
        mean_before,
        mean_after,
        change,
        low,
        high,
        found.welch_p,
        len(before),
        len(after),
        positions[at - 1],
    )


def _passes(point: ChangePoint, p_max: float, min_change: float, min_size: int) -> bool:
    # A change from a mean of zero (iowait on an idle disk, then some) has no relative size: it
    # cannot be told as "+x %", and its infinity is no JSON a payload or the API could carry.
    sides_long_enough = point.rounds_before >= min_size and point.rounds_after >= min_size
    return sides_long_enough and point.p < p_max and math.isfinite(point.change) and abs(point.change) >= min_change


def p_threshold(rounds: int, min_size: int = MIN_SIZE, alpha: float = ALPHA) -> float:
    """The p a change must beat in a series of `rounds`: alpha over the places it could be."""
    return alpha / max(1, rounds - 2 * min_size + 1)


def detect(
    values: Sequence[float | None],
    *,
    min_size: int = MIN_SIZE,
    alpha: float = ALPHA,
    min_change: float = MIN_CHANGE,
) -> Detection:
    """The change points of a series of round means, in order; None or NaN rounds are skipped
    (and never reported as the round of a change)."""
    if min_size < 2:
        raise ValueError(f"min_size is the fewest rounds on each side of a change: 2 or more, not {min_size}")
    x, positions = _finite(values)
    if len(x) < 2 * min_size:
        return Detection([], f"{len(x)} rounds with a value: a change needs {min_size} on each side")
    if float(np.ptp(x)) == 0:
        return Detection([], f"all {len(x)} rounds have the same value")
    p_max = p_threshold(len(x), min_size, alpha)
    bounds = [0, *_candidates(x, min(SEARCH_MIN_SIZE, min_size), noise_sd(x)), len(x)]
    while len(bounds) > 2:
        points = [_tested(x, bounds, k, positions) for k in range(1, len(bounds) - 1)]
        failing = [k for k, point in enumerate(points) if not _passes(point, p_max, min_change, min_size)]
        if not failing:
            return Detection(points)
        weakest = max(failing, key=lambda k: (points[k].p, -abs(points[k].change)))
        del bounds[weakest + 1]
    return Detection([])
