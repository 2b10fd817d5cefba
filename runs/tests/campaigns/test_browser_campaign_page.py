"""A campaign's page in a real browser: its owner may cancel and retry it, another operator sees
why not (the buttons disabled, the reason beside them). Screenshots go to test-artifacts/."""

import pytest

from runs.campaigns.services.campaigns import campaign_create
from runs.models import Run, RunState
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in
from runs.tests.campaigns.test_campaigns import devices_and_options, lab1, plan_on
from runs.tests.factories import make_user


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_another_operator_sees_who_may_cancel_or_retry_a_campaign_and_its_owner_may(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    make_user("olga", "operator", password=PASSWORD)
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host), repetitions=2), by=otto)
    Run.objects.filter(campaign=campaign, repetition=1).update(state=RunState.FAILED, error="mkfs failed")
    ARTIFACTS.mkdir(exist_ok=True)
    seen = {}
    with chromium(height=1400) as (context, violations):
        for who in ("olga", "otto"):
            context.clear_cookies()  # the next one signs in afresh
            page = context.new_page()
            log_in(page, page_server, who)
            page.goto(f"{page_server}/campaigns/{campaign.pk}/")
            seen[who] = {
                "cancel disabled": page.is_disabled("#cancel-campaign"),
                "retry disabled": page.is_disabled("#retry-failed"),
                "refusals": [page.text_content(f"#{name}-refusal") for name in ("cancel-campaign", "retry-failed")]
                if who == "olga"
                else [],
                # Each asks first, naming the configuration's unfinished runs (a <details> box).
                "configuration cancels": page.locator("#matrix details[id^=cancel-configuration-] summary").count(),
                # The owner's retry runs each failed run again with its seed unless this box is ticked.
                "new seeds box": page.locator("#retry-new-seeds").count() == 1
                and page.is_visible("#retry-new-seeds")
                and not page.is_checked("#retry-new-seeds"),
            }
            if who == "otto":
                page.locator("form:has(#retry-failed)").screenshot(path=str(ARTIFACTS / "campaign-retry-seeds.png"))
                page.click("#cancel-campaign-open")
                seen[who]["cancel asks"] = page.text_content("#cancel-campaign-question")
                page.screenshot(path=str(ARTIFACTS / "campaign-cancel-confirm.png"))
            page.screenshot(path=str(ARTIFACTS / f"campaign-page-as-{who}.png"), full_page=True)
            page.close()

    assert seen["olga"]["cancel disabled"] and seen["olga"]["retry disabled"]
    assert seen["olga"]["refusals"] == [
        "Only otto, who queued this campaign, or an admin can cancel it.",
        "Only otto, who queued this campaign, or an admin can retry it.",
    ]
    assert seen["olga"]["configuration cancels"] == 0
    assert not seen["otto"]["cancel disabled"] and not seen["otto"]["retry disabled"]
    assert seen["otto"]["configuration cancels"] == 4
    assert seen["otto"]["cancel asks"] == f"Cancel campaign {campaign.pk} ({campaign.name}, 4 of 8 runs finished)?"
    assert seen["otto"]["new seeds box"] and not seen["olga"]["new seeds box"]
    assert not violations, violations


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_campaign_page_shows_each_device_s_canary_and_flags_the_one_that_changed(page_server: str) -> None:
    from runs.tests.campaigns.test_canary import measured_campaign

    campaign = measured_campaign(make_user("otto", "operator", password=PASSWORD))
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium(height=1400) as (context, violations):
        page = context.new_page()
        log_in(page, page_server, "otto")
        page.goto(f"{page_server}/campaigns/{campaign.pk}/")
        statuses = page.locator("#campaign-canary .canary-status").all_text_contents()
        flagged_rows = page.locator("#campaign-canary tr.canary-changed").count()
        verdict = page.text_content("#canary-verdict") or ""
        check = page.text_content("#method-canary") or ""
        page.locator("#campaign-canary").screenshot(path=str(ARTIFACTS / "campaign-canary.png"))
        page.locator("#method").screenshot(path=str(ARTIFACTS / "campaign-canary-method.png"))
        page.close()

    assert sorted(statuses) == ["changed", "unchanged"]
    assert flagged_rows == 3  # the HDD's random reads: IOPS, bandwidth and mean latency
    assert verdict.split()[0] == "warning" and "lab1:hdd (beyond ×1.25" in verdict
    assert "rand-read-qd1 IOPS 185 → 111 (−40 %)" in verdict
    assert "fio canary" in check and "warning" in check and "To change:" in check
    assert not violations, violations
