"""A schedule made in the admin, in a real browser: an admin picks the campaign by id, writes the
times as a crontab (its fields shown once "crontab" is chosen), saves, and the schedule's change
form shows them back. Screenshots go to
test-artifacts/."""

import pytest

from runs.campaigns.services.campaigns import campaign_create
from runs.models import CampaignSchedule
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.campaigns.test_campaigns import devices_and_options, lab1, plan_on
from runs.tests.factories import make_user


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_admin_makes_a_schedule_in_the_admin(page_server: str) -> None:
    make_user("ada", "admin", password=PASSWORD)
    otto = make_user("otto", "operator")
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host), repetitions=1), by=otto)

    with signed_in(page_server, "ada", "/admin/runs/campaignschedule/add/", height=1100) as (page, violations, errors):
        page.fill("#id_name", "weekly ram vs hdd")
        page.fill("#id_campaign", str(campaign.pk))
        preset_hides = not page.is_visible("fieldset.crontab-fields")  # "every night" needs no crontab
        page.screenshot(path=str(ARTIFACTS / "admin-schedule-add-preset.png"), full_page=True)
        page.select_option("#id_times", "custom")
        custom_shows = page.is_visible("fieldset.crontab-fields #id_minute")
        page.fill("#id_day_of_month", "31")
        page.fill("#id_month_of_year", "2")
        page.click("input[name=_save]")
        refusal = " ".join((page.text_content(".errorlist") or "").split())
        page.screenshot(path=str(ARTIFACTS / "admin-schedule-add-refused.png"), full_page=True)
        page.fill("#id_day_of_month", "*")
        page.fill("#id_month_of_year", "*")
        page.fill("#id_day_of_week", "sun")
        page.click("input[name=_continue]")
        page.wait_for_selector(".messagelist .success")
        shown = {name: page.input_value(f"#id_{name}") for name in ("name", "minute", "hour", "day_of_week")}
        page.screenshot(path=str(ARTIFACTS / "admin-schedule-change.png"), full_page=True)

    assert preset_hides and custom_shows
    assert refusal.startswith("These times never come (Invalid crontab: day_of_month '31' never occurs"), refusal
    assert shown == {"name": "weekly ram vs hdd", "minute": "0", "hour": "2", "day_of_week": "sun"}
    assert CampaignSchedule.objects.get().campaign == campaign
    assert not violations, violations
    assert errors == [], errors
