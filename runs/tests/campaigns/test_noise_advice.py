"""Noise advice: the coefficient of variation, the repetitions a ±X % interval would take, and
Mann-Whitney's floor at small n; hand-worked numbers in the comments (t quantiles from tables)."""

import math

import pytest
from django.urls import reverse
from scipy import stats  # type: ignore[import-untyped]

from runs.campaigns.matrix import Variable
from runs.campaigns.noise_advice import noise_advice, within_noise
from runs.campaigns.selectors.results import campaign_runs, campaign_statistics
from runs.campaigns.services.campaigns import campaign_create
from runs.compare.stats import compare, mann_whitney_floor, mann_whitney_note, repetitions_to_resolve, t_quantile
from runs.models import Run, RunState
from runs.tests.campaigns.test_campaigns import lab1, plan_on


def test_the_repetitions_for_a_cv_of_10_pct_and_5_pct_by_hand() -> None:
    # t(0.975, 17) = 2.1098: 2.1098 · 0.10 / √18 = 0.04973 ≤ 0.05; t(0.975, 16) = 2.1199: 2.1199 · 0.10 / √17
    # = 0.05142 > 0.05. So 18.
    assert t_quantile(17) == pytest.approx(2.1098, abs=1e-4) and t_quantile(16) == pytest.approx(2.1199, abs=1e-4)
    assert repetitions_to_resolve(0.10, 5.0) == 18
    # No spread: 2 runs already; a spread no count resolves: None.
    assert repetitions_to_resolve(0.0, 5.0) == 2
    assert repetitions_to_resolve(5.0, 0.1) is None
    with pytest.raises(ValueError, match="half-width > 0"):
        repetitions_to_resolve(0.1, 0.0)


def test_mann_whitney_cannot_go_below_0_1_with_3_runs_each() -> None:
    # 3 vs 3: C(6, 3) = 20 rank orders, the two most extreme give p = 2/20 = 0.1, as scipy's exact test says.
    assert mann_whitney_floor(3, 3) == 0.1 == stats.mannwhitneyu([1, 2, 3], [4, 5, 6]).pvalue
    # 4 vs 4: 2 / C(8, 4) = 2/70 = 0.0286 < 0.05; 3 vs 4: 2/35 = 0.057.
    assert mann_whitney_floor(4, 4) == pytest.approx(2 / 70) == stats.mannwhitneyu([1, 2, 3, 4], [5, 6, 7, 8]).pvalue
    assert mann_whitney_note(3, 3) == "3 runs each: Mann-Whitney cannot reach p < 0.1 — use ≥ 4 repetitions"
    assert mann_whitney_note(3, 4) == "3 vs 4 runs: Mann-Whitney cannot reach p < 0.057 — use ≥ 4 repetitions"
    assert mann_whitney_note(4, 4) == ""


def test_a_comparison_of_3_runs_each_says_mann_whitney_cannot_decide() -> None:
    three = compare([100.0, 102.0, 98.0], {1: [150.0, 149.0, 152.0]})[1]
    four = compare([100.0, 102.0, 98.0, 101.0], {1: [150.0, 149.0, 152.0, 151.0]})[1]

    assert three.mann_whitney_p == pytest.approx(0.1) and (three.mann_whitney_note or "").startswith("3 runs each")
    assert four.mann_whitney_note is None


@pytest.mark.django_db
def test_each_configuration_shows_its_cv_and_the_repetitions_and_within_noise_suggests_adaptive(
    users: dict, client_for: object
) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, [Variable("clients", ("1", "2"))]), by=users["otto"])
    # Baseline [10, 12, 14]: mean 12, sd 2, CV 1/6 = 16.7 %; CI ±t(2)·2/√3 = ±4.968 = ±41.4 %.
    # For ±5 %: t(n-1)/√n ≤ 0.3: n = 45 gives 2.0154/6.708 = 0.3004, n = 46 gives 2.0141/6.782 = 0.2970.
    for run, tps in zip(Run.objects.filter(campaign=campaign).order_by("pk"), (10, 11, 12, 13, 14, 14), strict=True):
        Run.objects.filter(pk=run.pk).update(state=RunState.DONE, steady_tps_mean=float(tps))
    table = campaign_statistics(campaign, campaign_runs(campaign), 0)[0]

    advice = noise_advice(table, None)
    noise = within_noise(table)
    page = client_for("vera").get(reverse("campaign-detail", args=[campaign.pk])).content.decode()  # type: ignore[operator]

    # Its range: (14 - 10) / 12 = 33.3 % of the median.
    assert advice[0].text == (
        "CV 16.7 %, range 33.3 % of the median, 95 % CI ±41.4 % with 3 runs: about 46 repetitions would resolve ±5 %"
    )
    # [11, 13, 14] against it: mean 12.667, +5.56 %, within noise. sd 1.5275 (squares 2.778 + 0.111 + 1.778
    # over 2); the difference's spread per run √(2² + 1.5275²) / 12 = 0.20972; t(n-1) · 0.20972 / √n ≤ 0.05556
    # first at n = 58 (t(57) = 2.0025: 0.05515), not at 57 (t(56) = 2.0032: 0.05565).
    assert [(n.label, round(n.difference_pct, 2)) for n in noise] == [(table.rows[1].configuration.label, 5.56)]
    assert noise[0].repetitions == 58
    assert math.isclose(table.rows[1].summary.cv or 0, 1.5275 / 12.667, rel_tol=1e-3)
    assert "about 46 repetitions would resolve ±5 %" in page and "The adaptive mode repeats" in page
    assert "3 runs each: Mann-Whitney cannot reach p &lt; 0.1 — use ≥ 4 repetitions" in page
