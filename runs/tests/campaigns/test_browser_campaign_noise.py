"""A campaign's page in a real browser: its progress counts states in words, each configuration's
noise is told with the repetitions that would resolve it, a difference within noise points to
the adaptive mode, and Mann-Whitney at 3 runs each says it cannot decide. Screenshot in
test-artifacts/."""

import pytest

from runs.campaigns.matrix import Variable
from runs.campaigns.services.campaigns import campaign_create
from runs.models import Run, RunState
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.campaigns.test_campaigns import lab1, place, plan_on
from runs.tests.factories import make_user


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_campaign_page_tells_noise_and_states_in_words(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, [Variable("clients", ("1", "2", "4"))]), by=otto)
    tps = {0: (100.0, 104.0, 96.0), 1: (101.0, 99.0, 105.0), 2: (150.0, 152.0)}
    for run in Run.objects.filter(campaign=campaign):
        values = tps[place(run)[0]]
        rows = Run.objects.filter(pk=run.pk)
        if (repetition := place(run)[1]) <= len(values):
            rows.update(state=RunState.DONE, steady_tps_mean=values[repetition - 1])
        else:
            rows.update(state=RunState.INITIALIZING_DATABASE)
    with signed_in(page_server, "otto", f"/campaigns/{campaign.pk}/", height=1400) as (page, violations, _errors):
        progress = page.text_content("#progress") or ""
        advice = page.locator("#noise-advice li").all_text_contents()
        within = page.text_content("#within-noise-advice") or ""
        notes = page.locator(".mann-whitney-note").all_text_contents()
        page.locator("#noise-advice").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "campaign-noise.png"), full_page=True)

    assert "1 initializing database" in progress and "initializing_database" not in progress
    assert "8 done" in progress
    assert len(advice) == 3 and "repetitions would resolve ±5 %" in advice[0], advice
    assert "CV 4.0 %" in advice[0]  # sd 4 of a mean of 100
    assert "The adaptive mode repeats" in within, within
    assert "2 clients/1 threads (+1.7 %: about 38 repetitions each" in within, within
    # 3 vs 3: cannot decide; 3 vs 2 neither (2 / C(5, 2) = 0.2).
    assert "3 runs each: Mann-Whitney cannot reach p < 0.1 — use ≥ 4 repetitions" in notes, notes
    assert not violations, violations
