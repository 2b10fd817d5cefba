"""The schedule pages without a browser: "Repeat on a schedule" on a campaign's page, the schedule's
page and the list; bad times refused naming the field, nothing written; who sees which buttons."""

import pytest
from django.contrib.auth.models import User

from runs.models import CampaignSchedule
from runs.schedules.services.rounds import schedule_fire
from runs.tests.conftest import ClientFactory
from runs.tests.schedules.test_rounds import nightly, template

pytestmark = pytest.mark.django_db

FORM = {"name": "nightly", "times": "custom", "minute": "0", "hour": "2", "day_of_month": "*",
        "month_of_year": "*", "day_of_week": "mon-fri"}  # fmt: skip


def test_the_owner_repeats_a_campaign_from_its_page(users: dict[str, User], client_for: ClientFactory) -> None:
    campaign = template(users["otto"])
    otto = client_for("otto")
    assert b'id="schedule-new"' in otto.get(f"/campaigns/{campaign.pk}/").content

    response = otto.post(f"/campaigns/{campaign.pk}/schedule", FORM)

    schedule = CampaignSchedule.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/schedules/{schedule.pk}/"
    page = otto.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "crontab “0 2 * * mon-fri”" in page and "next round:" in page and "02:00 UTC" in page
    listed = client_for("vera").get("/schedules/").content.decode()
    assert f'href="/schedules/{schedule.pk}/"' in listed and "crontab “0 2 * * mon-fri”" in listed


def test_bad_times_are_named_on_the_campaign_page_and_nothing_is_scheduled(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    campaign = template(users["otto"])

    response = client_for("otto").post(f"/campaigns/{campaign.pk}/schedule", FORM | {"hour": "25", "minute": "x"})

    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was scheduled." in page
    assert "The hour “25” is not allowed (Invalid end range: 25 &gt; 23): write 0-23" in page
    assert "The minute “x” is not allowed (not a number)" in page
    assert not CampaignSchedule.objects.exists()


def test_others_see_the_schedule_but_not_its_buttons(users: dict[str, User], client_for: ClientFactory) -> None:
    schedule = nightly(users["otto"])
    olga = User.objects.create_user("olga")
    olga.groups.add(*users["otto"].groups.all())
    client_for.users["olga"] = olga

    for who in ("vera", "olga"):
        page = client_for(who).get(f"/campaigns/{schedule.campaign_id}/").content.decode()
        assert "nightly ram vs hdd" in page and 'id="schedule-new"' not in page and "pause-schedule" not in page
    assert "Only otto, who queued this campaign, or an admin can schedule it." in page
    assert client_for("olga").post(f"/schedules/{schedule.pk}/enable", {"enabled": "no"}).status_code == 403
    assert client_for("vera").post(f"/schedules/{schedule.pk}/enable", {"enabled": "no"}).status_code == 403
    schedule.refresh_from_db()
    assert schedule.enabled


def test_pause_resume_and_a_round_s_page_links_back(users: dict[str, User], client_for: ClientFactory) -> None:
    schedule = nightly(users["otto"])
    otto = client_for("otto")

    assert otto.post(f"/schedules/{schedule.pk}/enable", {"enabled": "no"}).status_code == 302
    assert "paused" in otto.get(f"/schedules/{schedule.pk}/").content.decode()
    assert otto.post(f"/schedules/{schedule.pk}/enable", {"enabled": "maybe"}).status_code == 400
    assert otto.post(f"/schedules/{schedule.pk}/run-now").status_code == 302
    round_one = schedule.rounds.get()
    page = otto.get(f"/campaigns/{round_one.pk}/").content.decode()
    assert f'Round 1 of the schedule <a href="/schedules/{schedule.pk}/">nightly ram vs hdd</a>' in page
    schedule_fire(schedule_id=schedule.pk, by=users["otto"])  # round 1 still runs
    rounds = otto.get(f"/schedules/{schedule.pk}/").content.decode()
    assert f"Round 1 (campaign {round_one.pk}) still runs." in rounds and "nightly ram vs hdd · round 1" in rounds
    assert otto.post(f"/schedules/{schedule.pk}/delete").status_code == 302
    assert not CampaignSchedule.objects.exists()


def test_the_admin_lists_schedules_and_pauses_them_through_the_service(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    schedule = nightly(users["otto"])
    ada = client_for("ada")

    listed = ada.get("/admin/runs/campaignschedule/").content.decode()

    assert "nightly ram vs hdd" in listed and "0 2 * * *" in listed
    assert ada.get("/admin/django_celery_beat/periodictask/").status_code == 404  # only the services write it
    ada.post("/admin/runs/campaignschedule/", {"action": "pause", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert not schedule.enabled and not schedule.periodic_task.enabled
