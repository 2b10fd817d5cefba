"""Change points in hand-made series (runs.watch.changepoints): the issue's "a 5 % step at 3 % CV
is found, noise alone is not", two steps, too short a series, a constant one, missing rounds, and
the rates over seeded synthetic series that the detector was tuned on.

The small series are written out (tps of rounds around 1000, 3 % CV: sd 30) so each can be checked
by hand; they were drawn once with numpy's default_rng(34), (35) and (36) and rounded."""

import math

import numpy as np
import pytest

from runs.watch.changepoints import ALPHA, MIN_CHANGE, _SquaredDeviations, detect, noise_sd, p_threshold

# 20 rounds at 1000 tps, then 20 at 1050 (+5 %), each with 3 % noise.
STEP = [999, 962, 1077, 1014, 1019, 994, 1002, 1010, 1006, 982, 1018, 1015, 996, 978, 974, 970, 1008, 989, 1026, 973,
        1073, 1051, 1032, 1083, 1055, 1075, 1084, 1066, 1035, 1056, 1082, 1030, 1067, 1044, 1035, 1032, 1016, 1042,
        1062, 988]  # fmt: skip
# 40 rounds at 1000 tps with 3 % noise and nothing else.
NOISE = [966, 1023, 1035, 1022, 1043, 1000, 957, 998, 1014, 1012, 982, 938, 1063, 1000, 1014, 981, 975, 1019, 1029,
         972, 983, 979, 967, 975, 996, 948, 1064, 957, 988, 1053, 987, 1001, 1019, 1051, 973, 1046, 967, 1057, 1034,
         1017]  # fmt: skip
# 15 rounds at 1000, 15 at 1060 (+6 %), 15 at 980 (-7.5 % from there), 3 % noise.
TWO_STEPS = [967, 991, 992, 993, 1034, 1004, 1011, 1000, 973, 1005, 1022, 1004, 984, 963, 1049, 1035, 1035, 1018, 1070,
             1063, 1036, 1054, 1066, 1047, 1027, 1051, 1067, 1029, 1041, 1079, 1011, 1003, 988, 1014, 967, 977, 974,
             1005, 958, 966, 1026, 966, 927, 1002, 1008]  # fmt: skip


def test_it_finds_a_5_percent_step_at_3_percent_cv_at_its_round() -> None:
    [point] = detect(STEP).points
    assert point.index == 20  # the first round at 1050
    assert (point.rounds_before, point.rounds_after) == (20, 20)
    assert point.before_mean == pytest.approx(sum(STEP[:20]) / 20) == pytest.approx(1000.6)
    assert point.after_mean == pytest.approx(sum(STEP[20:]) / 20) == pytest.approx(1050.4)
    assert point.change == pytest.approx(1050.4 / 1000.6 - 1)  # +4.98 %
    assert point.change_low is not None and point.change_high is not None
    assert 0.02 < point.change_low < 0.05 < point.change_high < 0.08  # the true +5 % is inside
    assert point.p < p_threshold(40) == pytest.approx(0.05 / 31)


def test_noise_alone_has_no_change_point() -> None:
    detection = detect(NOISE)
    assert detection.points == [] and detection.reason == ""  # searched, nothing found


def test_it_finds_two_steps_each_within_a_round() -> None:
    up, down = detect(TWO_STEPS).points
    assert abs(up.index - 15) <= 1 and abs(down.index - 30) <= 1
    assert up.change > 0.04 and down.change < -0.05
    assert up.after_mean == down.before_mean  # the middle segment is shared


def test_a_series_shorter_than_two_segments_is_not_searched() -> None:
    detection = detect([1000, 1000, 1000, 1000, 1050, 1050, 1050, 1050, 1050])
    assert detection.points == []
    assert detection.reason == "9 rounds with a value: a change needs 5 on each side"


def test_a_constant_series_has_no_change_point_and_says_why() -> None:
    detection = detect([812.5] * 30)
    assert detection.points == [] and detection.reason == "all 30 rounds have the same value"


def test_rounds_without_a_value_are_skipped_and_the_change_keeps_its_round() -> None:
    values: list[float | None] = [*STEP[:10], None, *STEP[10:25], math.nan, *STEP[25:]]
    [point] = detect(values).points
    assert (point.before_index, point.index) == (20, 21)  # round 20 of STEP, one later for the None before it
    [across] = detect([*STEP[:20], None, None, *STEP[20:]]).points
    assert (across.before_index, across.index) == (19, 22)  # the rounds without a value lie between
    assert point.rounds_before == 20 and point.rounds_after == 20  # the gaps are not rounds
    assert detect([None, 1000, 1010] * 4).reason == "8 rounds with a value: a change needs 5 on each side"


def test_a_step_without_noise_is_certain_and_exact() -> None:
    [point] = detect([1000.0] * 10 + [1100.0] * 10).points
    assert (point.index, point.p) == (10, 0.0)
    assert point.change == point.change_low == point.change_high == pytest.approx(0.10)


def test_a_change_from_zero_has_no_relative_size_and_is_not_reported() -> None:
    # iowait at 0 % on an idle disk, then some: "+inf %" is no size, nor JSON (review of issue 34).
    assert detect([0.0] * 10 + [0.1, 0.2, 0.1, 0.15, 0.12]).points == []
    assert detect([0.0] * 10 + [0.5] * 10).points == []
    [point] = detect([0.5] * 10 + [0.0] * 10).points  # down to zero is -100 %: a size
    assert point.change == -1.0


def test_a_shift_smaller_than_the_minimum_is_not_reported() -> None:
    # +1.5 % over 60 quiet rounds: certain, but below MIN_CHANGE (2 %).
    rng = np.random.default_rng(7)
    x = np.r_[np.full(30, 1000.0), np.full(30, 1015.0)] + rng.normal(0, 2, 60)
    assert MIN_CHANGE == 0.02 and detect(x.tolist()).points == []
    assert detect(x.tolist(), min_change=0.01).points[0].index == 30


def test_the_noise_estimate_ignores_a_step() -> None:
    # Differences of rounds: a step moves one of them, so their MAD leaves it out; the series' sd
    # takes it in (sqrt(30² + 50²) = 58 for a step of 100 in the middle).
    rng = np.random.default_rng(5)
    x = np.r_[np.full(100, 1000.0), np.full(100, 1100.0)] + rng.normal(0, 30, 200)
    assert 27 < noise_sd(x) < 33 and float(np.std(x)) > 55
    # Mostly repeated values (MAD 0): the differences' plain sd, here one difference of 1 in 9.
    assert noise_sd(np.array([5.0] * 9 + [6.0])) == pytest.approx(np.std([0.0] * 8 + [1.0]) / math.sqrt(2))


def test_the_running_sums_cost_is_ruptures_least_squares() -> None:
    import ruptures  # type: ignore[import-untyped]

    x = np.array(STEP, dtype=float).reshape(-1, 1)
    ours, theirs = _SquaredDeviations().fit(x), ruptures.costs.CostL2().fit(x)
    for start, end in ((0, 40), (0, 20), (20, 40), (3, 9), (17, 23)):
        assert ours.error(start, end) == pytest.approx(theirs.error(start, end), rel=1e-9)


def test_bad_min_size_is_refused() -> None:
    with pytest.raises(ValueError, match="min_size is the fewest rounds on each side of a change: 2 or more, not 1"):
        detect(STEP, min_size=1)


def _lab_series(rng: np.random.Generator, before: int, after: int, step: float) -> list[float]:
    means = np.r_[np.full(before, 1000.0), np.full(after, 1000.0 * (1 + step))]
    return (means * (1 + 0.03 * rng.standard_normal(before + after))).tolist()


def test_a_5_percent_step_is_found_in_most_seeded_series() -> None:
    # 20 + 20 rounds at 3 % CV: the difference of the means is 5.3 standard errors. Measured: 97 of 100.
    rng = np.random.default_rng(2026)
    found = [detect(_lab_series(rng, 20, 20, 0.05)).points for _ in range(100)]
    assert sum(1 for points in found if any(abs(p.index - 20) <= 3 for p in points)) >= 90


def test_noise_alone_is_flagged_less_often_than_alpha() -> None:
    # The bound: the first change is one of K splits, tested at ALPHA / K (Bonferroni), so noise
    # passes at most ALPHA = 5 % of the time: at most 10 of 200. Measured with this seed: 2.
    rng = np.random.default_rng(2027)
    flagged = sum(1 for _ in range(200) if detect(_lab_series(rng, 40, 0, 0.0)).points)
    assert ALPHA == 0.05 and flagged <= 10


def test_a_change_too_near_the_end_waits_for_its_fifth_round_and_is_then_put_where_it_is() -> None:
    before = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0]
    after = [50.0, 51.0, 49.0, 50.0]

    four_after = detect(before + after)
    five_after = detect([*before, *after, 52.0])

    # Searched with segments of 5, four rounds from the end it had been put between rounds 5 and 6.
    assert four_after.points == []
    [point] = five_after.points
    assert (point.before_index, point.index, point.rounds_before, point.rounds_after) == (5, 6, 6, 5)
