"""A campaign repeated on a schedule, in a real browser: its owner picks the times on the campaign's
page, sees the next round, runs one now, pauses it, and opens the schedule's page. Screenshots go
to test-artifacts/."""

import pytest

from runs.campaigns.services.campaigns import campaign_create
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.campaigns.test_campaigns import devices_and_options, lab1, plan_on
from runs.tests.factories import make_user


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_operator_repeats_a_campaign_pauses_it_and_opens_its_page(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host), repetitions=1), by=otto)

    with signed_in(page_server, "otto", f"/campaigns/{campaign.pk}/", height=1400) as (page, violations, errors):
        page.select_option("#id_times", "custom")
        page.fill("#id_hour", "25")
        page.click("#schedule-create")
        refusal = " ".join((page.text_content("#error-summary") or "").split())
        page.locator("#schedule-new").screenshot(path=str(ARTIFACTS / "schedule-form-bad-hour.png"))
        page.fill("#id_name", "nightly ram vs hdd")
        page.select_option("#id_times", "mondays")
        page.click("#schedule-create")
        page.wait_for_url("**/schedules/*/")
        next_round = page.text_content("#schedule-state .next-round") or ""
        page.click("#schedule-state .run-round-now")
        page.wait_for_selector("#rounds .firing-queued")
        rounds = " ".join((page.text_content("#rounds") or "").split())
        page.screenshot(path=str(ARTIFACTS / "schedule-page.png"), full_page=True)
        page.goto(f"{page_server}/campaigns/{campaign.pk}/")
        section = " ".join((page.text_content("#campaign-schedules") or "").split())
        page.click("#campaign-schedules .pause-schedule")
        page.wait_for_selector("#schedule-state .paused")
        paused = " ".join((page.text_content("#schedule-state") or "").split())
        page.goto(f"{page_server}/campaigns/{campaign.pk}/")
        page.locator("#campaign-schedules").screenshot(path=str(ARTIFACTS / "campaign-page-schedule-paused.png"))
        page.click("#campaign-schedules .firing-queued a")
        back_link = page.text_content("#schedule-round") or ""
        page.goto(f"{page_server}/schedules/")
        listed = " ".join((page.text_content("#schedule-list") or "").split())
        page.screenshot(path=str(ARTIFACTS / "schedule-list.png"), full_page=True)

    assert "Minute" not in refusal and "Hour: The hour “25” is not allowed (Invalid end range: 25 > 23)" in refusal
    assert next_round.startswith("Mon ") and next_round.endswith(" 02:00 UTC"), next_round
    assert "nightly ram vs hdd · round 1" in rounds and "queued" in rounds and "asked by otto" in rounds
    assert "Mondays at 02:00 (0 2 * * 1, UTC) · next round: Mon" in section and "last: queued" in section
    assert "paused" in paused and "next round" not in paused
    assert " ".join(back_link.split()) == "Round 1 of the schedule nightly ram vs hdd."
    assert "nightly ram vs hdd" in listed and "Mondays at 02:00" in listed and "paused" in listed
    assert not violations, violations
    assert [error.split(": ", 1)[1].split(" from ")[0] for error in errors] == ["400"], errors  # the bad hour only


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_crontab_fields_show_only_while_crontab_is_chosen(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host), repetitions=1), by=otto)
    fields = "#schedule-new fieldset.crontab-fields"

    with signed_in(page_server, "otto", f"/campaigns/{campaign.pk}/", height=1400) as (page, violations, errors):
        form = page.locator("#schedule-new")
        at_first = (page.input_value("#id_times"), page.is_visible(fields))
        form.screenshot(path=str(ARTIFACTS / "schedule-form-preset.png"))
        page.select_option("#id_times", "custom")
        custom = page.is_visible(fields) and page.is_visible("#id_hour")
        form.screenshot(path=str(ARTIFACTS / "schedule-form-custom.png"))
        page.select_option("#id_times", "mondays")
        mondays = page.is_visible(fields)
        page.select_option("#id_times", "custom")
        page.fill("#id_name", "weekday mornings")
        page.fill("#id_hour", "6")
        page.fill("#id_day_of_week", "mon-fri")
        page.click("#schedule-create")
        page.wait_for_url("**/schedules/*/")
        edit_custom = page.is_visible("#schedule-edit fieldset.crontab-fields") and page.input_value("#id_hour") == "6"
        page.select_option("#id_times", "nightly")
        edit_preset = page.is_visible("#schedule-edit fieldset.crontab-fields")

    assert at_first == ("nightly", False)
    assert custom and not mondays
    assert edit_custom and not edit_preset  # the schedule's page: its own custom times shown, then a preset
    assert not violations and not errors, violations + errors
