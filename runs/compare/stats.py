"""Honest statistics over repetitions of a benchmark configuration, and comparisons with a baseline.

Pure on purpose (stdlib, numpy, scipy only): views, the API and commands share it, and it is tested
without a database. Every distribution and test comes from scipy.stats; the only arithmetic written
here is Fieller's quadratic and Holm's step-down, neither of which scipy offers.
"""

import functools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

CONFIDENCE = 0.95
ALPHA = 0.05

Direction = Literal["higher_is_faster", "lower_is_faster", "neutral"]
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    sd: float | None
    minimum: float | None
    median: float | None
    maximum: float | None
    cv: float | None
    ci_low: float | None
    ci_high: float | None

    def as_json(self) -> dict[str, float | int | None]:
        return asdict(self)

    @property
    def range_pct(self) -> float | None:
        """(max - min) / median, in %: the noise budget's spread, robust to one odd run's pull on the mean."""
        if self.minimum is None or self.maximum is None or not self.median:
            return None
        return (self.maximum - self.minimum) / abs(self.median) * 100

    @property
    def ci_half_width_pct(self) -> float | None:
        if self.ci_low is None or self.ci_high is None or not self.mean:
            return None
        return (self.ci_high - self.ci_low) / 2 / abs(self.mean) * 100


@dataclass(frozen=True)
class Comparison:
    n_baseline: int
    n: int
    ratio: float | None
    ratio_ci_low: float | None
    ratio_ci_high: float | None
    difference_pct: float | None
    difference_ci_pct: float | None
    welch_p: float | None
    mann_whitney_p: float | None
    adjusted_p: float | None
    comparisons: int
    verdict: str
    text: str
    # Said instead of Mann-Whitney's p when the test could not have decided at these sizes.
    mann_whitney_note: str | None = None

    def as_json(self) -> dict[str, float | int | str | None]:
        return asdict(self)


@functools.cache
def _scipy_stats() -> Any:
    """scipy.stats, imported when first used: importing it takes a second, and every Django
    process would pay that at start (the admin's template tags import this module)."""
    from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type information

    return stats


def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """For a two-sided interval: the upper (1 + confidence) / 2 quantile of Student's t."""
    return float(_scipy_stats().t.ppf((1 + confidence) / 2, df))


def _finite(value: float) -> float | None:
    # scipy answers nan (or inf) where a statistic is undefined; results carry None instead.
    value = float(value)
    return value if math.isfinite(value) else None


def _checked(values: Sequence[float]) -> npt.NDArray[np.float64]:
    # A missing or NaN repetition would silently turn every statistic into nan: refuse it loudly.
    for i, value in enumerate(values):
        if value is None:
            raise ValueError(f"value #{i} is None: drop missing repetitions before summarising")
        if not math.isfinite(float(value)):
            raise ValueError(f"value #{i} is {float(value)}: only finite numbers can be summarised")
    return np.asarray(values, dtype=np.float64)


def summarise(values: Sequence[float]) -> Summary:
    """n, mean, sample sd, min/median/max, cv and Student's t confidence interval of the mean."""
    x = _checked(values)
    n = len(x)
    if n == 0:
        return Summary(0, None, None, None, None, None, None, None, None)
    low, high, median = float(x.min()), float(x.max()), float(np.median(x))
    # Identical values: report them exactly, not the 1e-17 noise that rounding in the mean leaves.
    mean = low if low == high else float(np.mean(x))
    if n < 2:
        return Summary(n, mean, None, low, median, high, None, None, None)
    sd = 0.0 if low == high else float(np.std(x, ddof=1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    cv = sd / abs(mean) if mean else None
    return Summary(n, mean, sd, low, median, high, cv, mean - half, mean + half)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the input's order (Holm 1979, Scand. J. Statist. 6:65-70).

    Sorted ascending, the j-th (0-based) of m p-values is multiplied by m - j, capped at 1, and a running
    maximum keeps the adjusted values monotone. Hand-written because scipy.stats only offers BH/BY
    (false_discovery_control), which control the false discovery rate, not the family-wise error.
    """
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for j, i in enumerate(sorted(range(m), key=lambda k: p_values[k])):
        running = max(running, min(1.0, (m - j) * p_values[i]))
        adjusted[i] = running
    return adjusted


def format_p(p: float) -> str:
    """Two significant digits ("p = 0.041", "p = 0.41"); anything below 0.001 is "p < 0.001"."""
    if p < 0.001:
        return "p < 0.001"
    digits = 2
    # A significant p must not read as "0.05" beside its verdict: add digits while rounding would cross ALPHA.
    while p < ALPHA <= float(f"{p:.{digits}g}"):
        digits += 1
    return f"p = {p:.{digits}g}"


def _fieller(a: float, va: float, b: float, vb: float, df: float) -> tuple[float, float] | None:
    """CI of a / b for independent means a, b with squared standard errors va, vb (covariance 0).

    Fieller's theorem (Fieller 1954, J. R. Statist. Soc. B 16:175-185; for two independent samples see
    von Luxburg & Franz 2009, Statistica Sinica 19:1095-1117). The bounds are the roots θ of the pivot
    (a - θb)² = t² (va + θ² vb); dividing that quadratic by b² gives, with r = a/b and g = t² vb / b²,
    θ = (r ± (t / |b|) · sqrt(va + r² vb - g va)) / (1 - g). g >= 1 means the baseline mean is not
    distinguishable from 0: the set is unbounded (or the whole line), so there is no interval: None.
    df is Welch-Satterthwaite's for va + vb, the same as Welch's test (an approximation for θ != 1).
    """
    if b == 0:
        return None
    t = t_quantile(df)
    g = t * t * vb / (b * b)
    if g >= 1:
        return None
    r = a / b
    spread = t / abs(b) * math.sqrt(va + r * r * vb - g * va)
    return (r - spread) / (1 - g), (r + spread) / (1 - g)


@dataclass(frozen=True)
class _Tests:
    welch_p: float
    mann_whitney_p: float | None
    ratio_ci: tuple[float, float] | None
    difference_ci_half: float | None


def _run_tests(x: npt.NDArray[np.float64], base: npt.NDArray[np.float64]) -> _Tests | None:
    welch = _scipy_stats().ttest_ind(x, base, equal_var=False)
    welch_p = _finite(welch.pvalue)
    if welch_p is None:
        return None
    ci = welch.confidence_interval(CONFIDENCE)  # of mean(x) - mean(base), Welch df
    half = _finite((ci.high - ci.low) / 2)
    va, vb = float(np.var(x, ddof=1)) / len(x), float(np.var(base, ddof=1)) / len(base)
    ratio_ci = _fieller(float(np.mean(x)), va, float(np.mean(base)), vb, float(welch.df))
    mann_whitney_p = _finite(_scipy_stats().mannwhitneyu(x, base, alternative="two-sided").pvalue)
    return _Tests(welch_p, mann_whitney_p, ratio_ci, half)


def mann_whitney_floor(n1: int, n2: int) -> float:
    """The smallest two-sided p Mann-Whitney's exact test can give for n1 vs n2 values: the two
    most extreme of the C(n1 + n2, n1) equally likely rank orders (3 vs 3: 2 / 20 = 0.1)."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def mann_whitney_note(n1: int, n2: int) -> str:
    """Why Mann-Whitney's p says nothing at these sizes, or "" when it can go below ALPHA."""
    floor = mann_whitney_floor(n1, n2)
    if floor < ALPHA:
        return ""
    enough = next(n for n in range(2, 100) if mann_whitney_floor(n, n) < ALPHA)
    sizes = f"{n1} runs each" if n1 == n2 else f"{n1} vs {n2} runs"
    return f"{sizes}: Mann-Whitney cannot reach p < {floor:.2g} — use ≥ {enough} repetitions"


@dataclass(frozen=True)
class Trend:
    change: float  # the fitted line's rise (or fall, negative) over the series, as a share of its mean
    p: float  # that the slope is zero (scipy's linregress)


def trend(xs: Sequence[float], ys: Sequence[float]) -> Trend | None:
    """A straight line through a series (per-second tps over a run's window); None for fewer than
    three points, a series whose x does not vary, or one whose mean is not positive."""
    x, y = _checked(xs), _checked(ys)
    if len(x) < 3 or np.ptp(x) == 0 or y.mean() <= 0:
        return None
    fit = _scipy_stats().linregress(x, y)
    return Trend(float(fit.slope * np.ptp(x) / y.mean()), float(fit.pvalue))


def repetitions_to_resolve(cv: float, half_width_pct: float, confidence: float = CONFIDENCE) -> int | None:
    """About how many repetitions bring the confidence interval of the mean to ±half_width_pct %
    of it, if the runs spread as they did (coefficient of variation cv): the smallest n with
    t(n - 1) · cv / √n ≤ half_width_pct / 100. None beyond 1000 (out of reach)."""
    if cv < 0 or half_width_pct <= 0:
        raise ValueError(f"cv must be ≥ 0 and the half-width > 0 %, not {cv} and {half_width_pct}")
    for n in range(2, 1001):
        if t_quantile(n - 1, confidence) * cv / math.sqrt(n) <= half_width_pct / 100:
            return n
    return None


def _verdict(mean: float, base_mean: float, adjusted_p: float, direction: Direction) -> str:
    if adjusted_p >= ALPHA:
        return "within noise"
    higher = mean > base_mean
    if direction == "neutral":
        return "higher" if higher else "lower"
    faster = higher if direction == "higher_is_faster" else not higher
    return "faster" if faster else "slower"


def _pct(value: float | None, base_mean: float | None) -> float | None:
    return value / abs(base_mean) * 100 if value is not None and base_mean else None


def _difference_text(diff_pct: float | None, ci_pct: float | None) -> str:
    if diff_pct is None:
        return ""
    return f"{diff_pct:+.1f} %" + ("" if ci_pct is None else f" ± {ci_pct:.1f} %")


def _tested_text(verdict: str, p: float, m: int, difference: str) -> str:
    p_text = format_p(p) + (f", Holm-adjusted over {m} comparisons" if m > 1 else "")
    if verdict == "within noise":
        return f"within noise ({p_text}" + (f", difference {difference})" if difference else ")")
    return f"{verdict}: {difference} ({p_text})" if difference else f"{verdict} ({p_text})"


def _ratio_and_difference(group: Summary, base: Summary) -> tuple[float | None, float | None]:
    if group.mean is None or not base.mean:
        return None, None
    # |baseline| so that the sign always says "higher" or "lower", whatever the baseline's sign.
    return group.mean / base.mean, (group.mean - base.mean) / abs(base.mean) * 100


def _comparison(
    group: Summary, base: Summary, tests: _Tests | None, adjusted_p: float | None, m: int, direction: Direction
) -> Comparison:
    ratio, diff_pct = _ratio_and_difference(group, base)
    untested = Comparison(base.n, group.n, ratio, None, None, diff_pct, None, None, None, None, 0, "", "")
    if group.n < 2 or base.n < 2:
        return replace(untested, verdict="too few runs", text=f"too few runs to tell (n = {group.n} vs {base.n})")
    if tests is None or adjusted_p is None or group.mean is None or base.mean is None:
        # Both groups constant: the only way Welch's test is undefined with n >= 2 on each side.
        text = f"no variance within either group: {group.n} vs {base.n} identical values"
        text += f"; difference {diff_pct:+.1f} %" if diff_pct is not None else ""
        return replace(untested, verdict="no variance", text=text)
    ci_pct = _pct(tests.difference_ci_half, base.mean)
    verdict = _verdict(group.mean, base.mean, adjusted_p, direction)
    low, high = tests.ratio_ci or (None, None)
    return replace(
        untested,
        ratio_ci_low=low,
        ratio_ci_high=high,
        difference_ci_pct=ci_pct,
        welch_p=tests.welch_p,
        mann_whitney_p=tests.mann_whitney_p,
        adjusted_p=adjusted_p,
        comparisons=m,
        verdict=verdict,
        text=_tested_text(verdict, adjusted_p, m, _difference_text(diff_pct, ci_pct)),
        mann_whitney_note=mann_whitney_note(group.n, base.n) or None,
    )


def compare(
    baseline: Sequence[float], others: Mapping[K, Sequence[float]], direction: Direction = "neutral"
) -> dict[K, Comparison]:
    """Compare each group with the baseline; Holm-correct the Welch p-values across the groups compared.

    Only groups that could be tested (n >= 2 on both sides, not both constant) form the Holm family:
    a comparison that was never made cannot produce a false positive.
    """
    base_values, base = _checked(baseline), summarise(baseline)
    groups = {key: (_checked(values), summarise(values)) for key, values in others.items()}
    tests: dict[K, _Tests] = {}
    for key, (values, summary) in groups.items():
        constant = summary.sd == 0 and base.sd == 0
        if summary.n >= 2 and base.n >= 2 and not constant:
            result = _run_tests(values, base_values)
            if result is not None:
                tests[key] = result
    adjusted = dict(zip(tests, holm_adjust([t.welch_p for t in tests.values()]), strict=True))
    return {
        key: _comparison(summary, base, tests.get(key), adjusted.get(key), len(tests), direction)
        for key, (_, summary) in groups.items()
    }
