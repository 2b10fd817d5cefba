"""runs.compare.stats: hand-worked numbers, cross-checks against scipy's own results, and the verdict rules.

Pure: no database, no Django. Expected values are worked out by hand in the comments; where a number
has no closed form (a t quantile, a Welch p with fractional df) it is taken from scipy and said so.
"""

import dataclasses
import math
import re
from typing import Any

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]

from runs.compare.stats import ALPHA, CONFIDENCE, Comparison, Summary, compare, format_p, holm_adjust, summarise

T_975_2 = 4.302652729911275  # t(0.975, df=2), from tables / scipy
T_975_3 = 3.182446305284263  # t(0.975, df=3)
T_975_4 = 2.7764451051977934  # t(0.975, df=4)

BASELINE = [100.0, 102.0, 98.0, 101.0]
CLEARLY_HIGHER = [150.0, 149.0, 152.0, 151.0]


def assert_no_nan(result: Summary | Comparison) -> None:
    for name, value in result.as_json().items():
        assert not (isinstance(value, float) and not math.isfinite(value)), f"{name} = {value}"


# --- summarise: hand-worked -------------------------------------------------------------------------


def test_three_values_by_hand() -> None:
    # [10, 12, 14]: mean 12; deviations -2, 0, 2 → squares 8 / (n-1 = 2) = 4 → sd 2; median 12; cv 2/12 = 1/6.
    # CI: 12 ± t(0.975, 2) · 2/√3 = 12 ± 4.302653 · 1.154701 = 12 ± 4.968275 → [7.031725, 16.968275].
    s = summarise([10, 12, 14])
    assert (s.n, s.mean, s.sd, s.minimum, s.median, s.maximum) == (3, 12.0, 2.0, 10.0, 12.0, 14.0)
    assert s.cv == pytest.approx(1 / 6)
    assert s.ci_low == pytest.approx(12 - T_975_2 * 2 / math.sqrt(3))
    assert s.ci_low == pytest.approx(7.031725, abs=1e-6)
    assert s.ci_high == pytest.approx(16.968275, abs=1e-6)
    # Half width 4.968275 of |12| = 41.4023 %.
    assert s.ci_half_width_pct == pytest.approx(41.4023, abs=1e-4)


def test_even_count_median_by_hand() -> None:
    # [4, 1, 3, 2] (unsorted on purpose): sorted 1 2 3 4 → median (2 + 3) / 2 = 2.5; mean 2.5.
    # Deviations ±1.5, ±0.5 → squares 2.25 + 0.25 + 0.25 + 2.25 = 5; / 3 → variance 5/3, sd 1.290994.
    # cv 1.290994 / 2.5 = 0.516398. CI 2.5 ± t(0.975, 3) · 1.290994 / 2 = 2.5 ± 2.054260 → [0.445740, 4.554260].
    s = summarise([4, 1, 3, 2])
    assert (s.n, s.mean, s.median, s.minimum, s.maximum) == (4, 2.5, 2.5, 1.0, 4.0)
    assert s.sd == pytest.approx(math.sqrt(5 / 3))
    assert s.cv == pytest.approx(0.516398, abs=1e-6)
    assert s.ci_low == pytest.approx(2.5 - T_975_3 * math.sqrt(5 / 3) / 2)
    assert (s.ci_low, s.ci_high) == (pytest.approx(0.445740, abs=1e-6), pytest.approx(4.554260, abs=1e-6))


def test_one_value_has_no_spread() -> None:
    # n = 1: the value is its own mean, median, min and max; sd needs n - 1 >= 1, so no sd, cv or CI.
    s = summarise([7.5])
    assert s == Summary(1, 7.5, None, 7.5, 7.5, 7.5, None, None, None)
    assert s.ci_half_width_pct is None


def test_no_values() -> None:
    s = summarise([])
    assert s == Summary(0, None, None, None, None, None, None, None, None)
    assert s.as_json() == dict.fromkeys(s.as_json(), None) | {"n": 0}


def test_identical_values_are_exact() -> None:
    # 0.1 + 0.1 + 0.1 is not 0.3 in floating point; the mean must still be 0.1 and the sd exactly 0.
    s = summarise([0.1, 0.1, 0.1])
    assert (s.mean, s.sd, s.cv, s.ci_low, s.ci_high) == (0.1, 0.0, 0.0, 0.1, 0.1)
    assert s.ci_half_width_pct == 0.0


def test_zero_mean_has_no_cv() -> None:
    # [-1, 0, 1]: mean 0, sd 1; cv and the CI as a percentage of the mean are undefined.
    s = summarise([-1, 0, 1])
    assert (s.mean, s.sd, s.cv, s.ci_half_width_pct) == (0.0, 1.0, None, None)


def test_as_json_is_a_plain_dict_of_the_fields() -> None:
    s = summarise([10, 12, 14])
    assert list(s.as_json()) == [f.name for f in dataclasses.fields(Summary)]
    assert s.as_json()["sd"] == 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n = 4  # type: ignore[misc]


@pytest.mark.parametrize("bad", [[1.0, float("nan")], [1.0, None], [float("inf"), 1.0]])
def test_missing_or_non_finite_values_are_refused(bad: list[Any]) -> None:
    with pytest.raises(ValueError, match=r"value #\d is"):
        summarise(bad)
    with pytest.raises(ValueError, match=r"value #\d is"):
        compare(bad, {"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"value #\d is"):
        compare([1.0, 2.0], {"a": bad})


# --- summarise against scipy's own results -----------------------------------------------------------


@pytest.mark.parametrize("values", [[10, 12, 14], [4, 1, 3, 2], [3.2, 5.9, 1.1, 8.4, 2.2, 2.2], list(range(50))])
def test_summary_agrees_with_scipy(values: list[float]) -> None:
    s = summarise(values)
    described = stats.describe(values)  # variance with ddof=1
    assert s.n == described.nobs
    assert (s.minimum, s.maximum) == tuple(described.minmax)
    assert s.mean == pytest.approx(described.mean)
    assert s.sd == pytest.approx(math.sqrt(described.variance))
    low, high = stats.t.interval(CONFIDENCE, len(values) - 1, loc=described.mean, scale=stats.sem(values))
    assert (s.ci_low, s.ci_high) == (pytest.approx(low), pytest.approx(high))


# --- compare: verdicts and numbers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("direction", "verdict"), [("higher_is_faster", "faster"), ("lower_is_faster", "slower"), ("neutral", "higher")]
)
def test_clearly_different_pair(direction: Any, verdict: str) -> None:
    c = compare(BASELINE, {"new": CLEARLY_HIGHER}, direction)["new"]
    # Baseline mean 100.25, variance 8.75/3; group mean 150.5, variance 5/3 (squared deviations by hand).
    # ratio 150.5 / 100.25 = 1.501247; difference 50.25 / 100.25 = +50.12 %.
    assert (c.n_baseline, c.n, c.verdict, c.comparisons) == (4, 4, verdict, 1)
    assert c.ratio == pytest.approx(1.501247, abs=1e-6)
    assert c.difference_pct == pytest.approx(50.124688, abs=1e-6)
    # Welch: va = (5/3)/4, vb = (8.75/3)/4, se = sqrt(13.75/12) = 1.070436, t = 50.25 / se = 46.94,
    # df = (13.75/12)² / ((5/12)²/3 + (8.75/12)²/3) = 5.5846: a p far below 0.001.
    welch = stats.ttest_ind(CLEARLY_HIGHER, BASELINE, equal_var=False)
    assert welch.statistic == pytest.approx(50.25 / math.sqrt(13.75 / 12))
    assert welch.df == pytest.approx(5.5846, abs=1e-4)
    assert c.welch_p is not None and c.welch_p < 0.001
    assert c.welch_p == pytest.approx(welch.pvalue)
    assert c.adjusted_p == c.welch_p  # a family of one
    # Complete separation of 4 vs 4: exact two-sided Mann-Whitney p = 2 / C(8, 4) = 2/70.
    assert c.mann_whitney_p == pytest.approx(2 / 70)
    # Welch CI half width: t(0.975, 5.5846) · 1.070436 = 2.667, of 100.25 → 2.66 %.
    ci = welch.confidence_interval(CONFIDENCE)
    assert c.difference_ci_pct == pytest.approx((ci.high - ci.low) / 2 / 100.25 * 100)
    assert c.difference_ci_pct == pytest.approx(2.6606, abs=1e-3)
    assert c.text == f"{verdict}: +50.1 % ± 2.7 % (p < 0.001)"
    assert c.ratio is not None and c.ratio_ci_low is not None and c.ratio_ci_high is not None
    assert c.ratio_ci_low < c.ratio < c.ratio_ci_high
    assert_no_nan(c)


def test_lower_is_faster_when_lower() -> None:
    c = compare(CLEARLY_HIGHER, {"new": BASELINE}, "lower_is_faster")["new"]
    assert c.verdict == "faster"
    assert c.text.startswith("faster: -33.4 % ± ")  # (100.25 - 150.5) / 150.5 = -33.39 %
    assert compare(CLEARLY_HIGHER, {"new": BASELINE}, "higher_is_faster")["new"].verdict == "slower"
    assert compare(CLEARLY_HIGHER, {"new": BASELINE})["new"].verdict == "lower"


def test_within_noise_with_a_hand_checkable_p() -> None:
    # Baseline [100, 110, 120], group [110, 120, 130]: both sd 10, n 3 → va = vb = 100/3, se = sqrt(200/3) = 8.165,
    # t = 10 / 8.165 = 1.224745 = sqrt(1.5); df = (200/3)² / (2 · (100/3)² / 2) = 4.
    # For 4 df the t CDF is closed-form: F(t) = 1/2 + (3/8) · u · (1 - t² / (12 · w)), w = 1 + t²/4, u = t / sqrt(w).
    # Here t² = 1.5: w = 1.375, u = 1.044466, F = 1/2 + 3/8 · 1.044466 · (1 - 1.5 / 16.5) = 0.856068,
    # so the two-sided p = 2 · (1 - 0.856068) = 0.287864.
    c = compare([100, 110, 120], {"new": [110, 120, 130]}, "higher_is_faster")["new"]
    assert c.welch_p == pytest.approx(0.287864, abs=1e-6)
    assert c.verdict == "within noise"
    # Difference 10 / 110 = +9.09 %; half width t(0.975, 4) · 8.165 = 22.670 → 20.61 % of 110.
    assert c.difference_ci_pct == pytest.approx(T_975_4 * math.sqrt(200 / 3) / 110 * 100)
    assert c.text == "within noise (p = 0.29, difference +9.1 % ± 20.6 %)"
    assert c.mann_whitney_p == pytest.approx(stats.mannwhitneyu([110, 120, 130], [100, 110, 120]).pvalue)
    assert_no_nan(c)


def test_too_few_runs() -> None:
    result = compare([1, 2, 3], {"one": [5], "none": []}, "higher_is_faster")
    one, none = result["one"], result["none"]
    # Means 5 and 2 exist: ratio 2.5 and +150 % are still given; nothing that needs a variance is.
    assert (one.verdict, one.text) == ("too few runs", "too few runs to tell (n = 1 vs 3)")
    assert (one.ratio, one.difference_pct) == (2.5, 150.0)
    assert one.as_json() | {"ratio": None, "difference_pct": None} == {
        **dict.fromkeys(one.as_json(), None),
        "n_baseline": 3,
        "n": 1,
        "comparisons": 0,
        "verdict": "too few runs",
        "text": one.text,
    }
    assert (none.ratio, none.difference_pct, none.text) == (None, None, "too few runs to tell (n = 0 vs 3)")
    assert compare([4], {"a": [1, 2, 3]})["a"].text == "too few runs to tell (n = 3 vs 1)"


def test_no_variance() -> None:
    c = compare([100, 100, 100], {"new": [104, 104, 104]}, "higher_is_faster")["new"]
    assert c.verdict == "no variance"
    assert c.text == "no variance within either group: 3 vs 3 identical values; difference +4.0 %"
    assert (c.ratio, c.difference_pct) == (1.04, 4.0)
    assert (c.welch_p, c.mann_whitney_p, c.adjusted_p, c.ratio_ci_low, c.difference_ci_pct) == (None,) * 5
    same = compare([5, 5], {"new": [5, 5, 5]})["new"]
    assert same.text == "no variance within either group: 3 vs 2 identical values; difference +0.0 %"
    assert_no_nan(c)
    assert_no_nan(same)


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")  # scipy, on the constant group
def test_one_constant_group_is_still_tested() -> None:
    # Welch only needs one of the two variances to be non-zero.
    c = compare([100, 101, 102], {"new": [110, 110, 110]})["new"]
    assert c.verdict == "higher"
    assert c.welch_p == pytest.approx(stats.ttest_ind([110] * 3, [100, 101, 102], equal_var=False).pvalue)


def test_zero_baseline_mean_gives_no_ratio_or_percentage() -> None:
    # Baseline [-1, 0, 1] has mean 0: no ratio, no percentage, no Fieller interval; Welch still runs
    # (t = 2 / sqrt(2/3) = 2.449, df 4 → p = 0.0704).
    c = compare([-1, 0, 1], {"new": [1, 2, 3]})["new"]
    assert (c.ratio, c.difference_pct, c.difference_ci_pct, c.ratio_ci_low, c.ratio_ci_high) == (None,) * 5
    assert c.welch_p == pytest.approx(2 * stats.t.sf(2 / math.sqrt(2 / 3), 4))
    assert c.text == "within noise (p = 0.07)"


# --- Holm ----------------------------------------------------------------------------------------------


def test_holm_by_hand() -> None:
    # Sorted 0.01, 0.03, 0.04 → times 3, 2, 1 = 0.03, 0.06, 0.04 → running max 0.03, 0.06, 0.06;
    # back in input order [0.01, 0.04, 0.03] → [0.03, 0.06, 0.06].
    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # Capped at 1: 2 · 0.6 = 1.2 → 1, and the running max keeps the other at 1.
    assert holm_adjust([0.7, 0.6]) == [1.0, 1.0]
    assert holm_adjust([0.2]) == [0.2]
    assert holm_adjust([]) == []


def test_holm_over_three_comparisons() -> None:
    baseline = [100, 110, 120]
    groups = {"a": [110, 120, 130], "b": [130, 135, 140], "c": [128, 132, 136], "short": [1]}
    raw = {k: stats.ttest_ind(v, baseline, equal_var=False).pvalue for k, v in groups.items() if k != "short"}
    # Raw Welch p from scipy: a 0.287864, b 0.031562, c 0.047444 ("short" is not in the family).
    assert raw == pytest.approx({"a": 0.287864, "b": 0.031562, "c": 0.047444}, abs=1e-6)
    # Holm by hand: sorted b, c, a → 3 · 0.031562 = 0.094687, 2 · 0.047444 = 0.094887, 1 · 0.287864;
    # the running max changes nothing. b and c were "significant" alone; over three comparisons they are not.
    result = compare(baseline, groups, "higher_is_faster")
    adjusted = {k: result[k].adjusted_p for k in raw}
    assert adjusted == pytest.approx({"a": raw["a"], "b": 3 * raw["b"], "c": 2 * raw["c"]})
    assert {k: result[k].verdict for k in groups} == {
        "a": "within noise",
        "b": "within noise",
        "c": "within noise",
        "short": "too few runs",
    }
    assert [result[k].comparisons for k in groups] == [3, 3, 3, 0]
    assert result["b"].text == "within noise (p = 0.095, Holm-adjusted over 3 comparisons, difference +22.7 % ± 18.9 %)"
    alone = compare(baseline, {"b": groups["b"]}, "higher_is_faster")["b"]
    assert (alone.verdict, alone.adjusted_p) == ("faster", pytest.approx(raw["b"]))
    assert alone.text == "faster: +22.7 % ± 18.9 % (p = 0.032)"


def test_significant_text_with_holm() -> None:
    result = compare(BASELINE, {"x": CLEARLY_HIGHER, "y": [99, 101, 100, 102], "z": [1]}, "higher_is_faster")
    assert re.fullmatch(
        r"faster: \+50\.1 % ± 2\.\d % \(p < 0\.001, Holm-adjusted over 2 comparisons\)", result["x"].text
    )
    assert result["y"].comparisons == 2


# --- p formatting ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (0.0004, "p < 0.001"),
        (0.001, "p = 0.001"),
        (0.002, "p = 0.002"),
        (0.041, "p = 0.041"),
        (0.4149, "p = 0.41"),
        (1.0, "p = 1"),
        (0.05, "p = 0.05"),
        # Significant (below ALPHA) but would round to 0.05: more digits rather than a contradiction.
        (0.0496, "p = 0.0496"),
        (0.04999, "p = 0.04999"),
    ],
)
def test_format_p(p: float, text: str) -> None:
    assert format_p(p) == text


# --- Fieller's ratio interval ---------------------------------------------------------------------------


def _welch_parts(group: list[float], baseline: list[float]) -> tuple[float, float, float, float, float]:
    a, b = float(np.mean(group)), float(np.mean(baseline))
    va, vb = float(np.var(group, ddof=1)) / len(group), float(np.var(baseline, ddof=1)) / len(baseline)
    df = (va + vb) ** 2 / (va**2 / (len(group) - 1) + vb**2 / (len(baseline) - 1))  # Welch-Satterthwaite
    return a, va, b, vb, float(stats.t.ppf((1 + CONFIDENCE) / 2, df))


@pytest.mark.parametrize(("baseline", "group"), [(BASELINE, CLEARLY_HIGHER), ([100, 110, 120], [110, 120, 130])])
def test_fieller_bounds_solve_the_pivot(baseline: list[float], group: list[float]) -> None:
    # The bounds θ are where the pivot (a - θb)² / (va + θ² vb) equals t²; the ratio lies between them.
    c = compare(baseline, {"g": group})["g"]
    a, va, b, vb, t = _welch_parts(group, baseline)
    assert c.ratio is not None and c.ratio_ci_low is not None and c.ratio_ci_high is not None
    assert c.ratio_ci_low < c.ratio < c.ratio_ci_high
    for theta in (c.ratio_ci_low, c.ratio_ci_high):
        assert (a - theta * b) ** 2 / (va + theta**2 * vb) == pytest.approx(t**2)


def test_fieller_matches_the_delta_method_for_large_tight_samples() -> None:
    # With n = 2000 and sd 1 around 1000 and 1500, g = t² vb / b² ≈ 2e-9: Fieller ≈ r ± t · sqrt(va/b² + a² vb/b⁴).
    rng = np.random.default_rng(20240601)
    baseline, group = list(1000 + rng.normal(0, 1, 2000)), list(1500 + rng.normal(0, 1, 2000))
    c = compare(baseline, {"g": group})["g"]
    a, va, b, vb, t = _welch_parts(group, baseline)
    r = a / b
    half = t * math.sqrt(va / b**2 + a**2 * vb / b**4)
    assert c.ratio == pytest.approx(r)
    assert c.ratio_ci_low == pytest.approx(r - half, abs=half * 1e-4)
    assert c.ratio_ci_high == pytest.approx(r + half, abs=half * 1e-4)


def test_fieller_unbounded_when_the_baseline_mean_is_not_distinguishable_from_zero() -> None:
    # Baseline [-1, 1, 2]: mean 2/3, sd 1.5275, its own 95 % CI 0.667 ± 3.79 contains 0, g = t² vb / b² > 1.
    baseline = [-1.0, 1.0, 2.0]
    low, high = stats.t.interval(CONFIDENCE, 2, loc=np.mean(baseline), scale=stats.sem(baseline))
    assert low < 0 < high
    c = compare(baseline, {"g": [5.0, 6.0, 7.0]})["g"]
    assert (c.ratio_ci_low, c.ratio_ci_high) == (None, None)
    assert c.ratio == pytest.approx(9.0)  # 6 / (2/3): the point estimate is still given
    assert c.welch_p is not None
    assert_no_nan(c)


def test_comparison_as_json_and_constants() -> None:
    c = compare(BASELINE, {1: CLEARLY_HIGHER})[1]
    assert list(c.as_json()) == [f.name for f in dataclasses.fields(Comparison)]
    assert c.as_json()["verdict"] == "higher"
    assert (CONFIDENCE, ALPHA) == (0.95, 0.05)
