"""The schedule API: create (a preset or crontab fields), bad input a 400 naming the field with
nothing written, patch (pause, times), run-now, delete, and who may."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django_celery_beat.models import PeriodicTask

from runs.models import Campaign, CampaignSchedule, ScheduleRound
from runs.tests.job_factories import make_change_point
from runs.tests.schedules.test_rounds import template
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db


def create(user: User, campaign: Campaign, **fields: Any) -> Any:
    body = {"campaign": campaign.pk, "name": "nightly"} | fields
    return api_client(user).post("/api/schedules/", body, format="json")


def test_an_operator_schedules_their_campaign_and_reads_the_next_round(users: dict[str, User]) -> None:
    campaign = template(users["otto"])

    response = create(users["otto"], campaign, preset="mondays")

    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["crontab"] == {"minute": "0", "hour": "2", "day_of_month": "*", "month_of_year": "*",
                               "day_of_week": "1"}  # fmt: skip
    assert data["times"] == "Mondays at 02:00" and data["timezone"] == "UTC" and data["enabled"] is True
    assert data["next_round_at"].endswith("T02:00:00+00:00") and data["rounds"] == []
    listed = api_client(users["vera"]).get("/api/schedules/").json()
    assert [item["id"] for item in listed["results"]] == [data["id"]]


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"minute": "61"}, "minute", "The minute “61” is not allowed"),
        ({"hour": "25", "day_of_week": "9"}, "day_of_week", "The day of week “9” is not allowed"),
        ({"preset": "hourly"}, "preset", "is not a valid choice"),
        ({"preset": "nightly", "hour": "3"}, "preset", "give a preset or the crontab fields (hour), not both"),
        ({"name": ""}, "name", "may not be blank"),
        ({"name": "night\nly"}, "name", "one line of text, without line breaks"),  # an email subject's
        ({"day_of_month": "31", "month_of_year": "2"}, "day_of_month", "These times never come"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    users: dict[str, User], fields: dict, field: str, says: str
) -> None:
    campaign = template(users["otto"])

    response = create(users["otto"], campaign, **fields)

    assert response.status_code == 400
    assert says in " ".join(response.json()[field]), response.json()
    assert (
        not CampaignSchedule.objects.exists() and not PeriodicTask.objects.filter(task="runs.schedule_round").exists()
    )


def test_who_may_create_a_schedule(users: dict[str, User]) -> None:
    campaign = template(users["otto"])
    olga = User.objects.create_user("olga")
    olga.groups.add(*users["otto"].groups.all())

    assert create(users["vera"], campaign).status_code == 403
    refused = create(olga, campaign)
    assert refused.status_code == 403
    assert refused.json()["detail"] == "Only otto, who queued this campaign, or an admin can schedule it."
    assert not CampaignSchedule.objects.exists()
    assert create(users["ada"], campaign).status_code == 201


def test_patch_pauses_and_retimes_and_run_now_queues_a_round(users: dict[str, User]) -> None:
    campaign = template(users["otto"])
    pk = create(users["otto"], campaign).json()["id"]
    otto = api_client(users["otto"])

    paused = otto.patch(f"/api/schedules/{pk}/", {"enabled": False, "hour": "4"}, format="json")

    assert paused.status_code == 200, paused.json()
    assert paused.json()["enabled"] is False and paused.json()["next_round_at"] is None
    assert paused.json()["crontab"]["hour"] == "4" and paused.json()["crontab"]["minute"] == "0"
    assert not PeriodicTask.objects.get(campaign_schedule__pk=pk).enabled
    bad = otto.patch(f"/api/schedules/{pk}/", {"hour": "4-2"}, format="json")
    assert bad.status_code == 400 and "The hour “4-2” is not allowed" in bad.json()["hour"][0]
    assert PeriodicTask.objects.get(campaign_schedule__pk=pk).crontab.hour == "4"

    fired = otto.post(f"/api/schedules/{pk}/run-now/")

    assert fired.status_code == 200, fired.json()
    assert fired.json()["fired"]["outcome"] == "queued" and fired.json()["fired"]["round"] == 1
    assert fired.json()["rounds"][0]["campaign"] == Campaign.objects.get(schedule_id=pk).pk
    assert api_client(users["vera"]).post(f"/api/schedules/{pk}/run-now/").status_code == 403


def test_delete_removes_the_schedule_for_its_owner_only(users: dict[str, User]) -> None:
    campaign = template(users["otto"])
    pk = create(users["otto"], campaign).json()["id"]
    olga = User.objects.create_user("olga")
    olga.groups.add(*users["otto"].groups.all())

    assert api_client(olga).delete(f"/api/schedules/{pk}/").status_code == 403
    assert api_client(users["vera"]).delete(f"/api/schedules/{pk}/").status_code == 403
    assert api_client(users["otto"]).delete(f"/api/schedules/{pk}/").status_code == 204
    assert not CampaignSchedule.objects.exists() and not ScheduleRound.objects.exists()
    assert not PeriodicTask.objects.filter(task="runs.schedule_round").exists()


@pytest.mark.parametrize("junk", ["[]", "{}", "null", '"' + "9" * 400 + '"', "-1", "1e400", "true", '"\\u0000"'])
def test_junk_in_any_field_of_a_new_schedule_is_a_400_or_a_schedule(users: dict[str, User], junk: str) -> None:
    from runs.tests.web.test_input_junk import API_BODIES, Lab, post_junk

    campaign = template(users["otto"])
    # The body names only the campaign; the change point is among what a refusal must leave as it was.
    lab = Lab(None, None, None, None, campaign, None, None, None, make_change_point())  # type: ignore[arg-type]
    for place in API_BODIES["schedule a campaign"].places(lab):
        post_junk(users["otto"], lab, "schedule a campaign", place, junk)
