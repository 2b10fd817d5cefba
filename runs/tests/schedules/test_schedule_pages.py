"""The schedule pages without a browser: "Repeat on a schedule" on a campaign's page, the schedule's
page and the list; bad times refused naming the field, nothing written; who sees which buttons."""

import pytest
from django.contrib.auth.models import User
from django_celery_beat.models import PeriodicTask

from runs.models import AuditAction, AuditEvent, CampaignSchedule
from runs.schedules.crontab import crontab_of_row
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
    two_lines = client_for("otto").post(f"/campaigns/{campaign.pk}/schedule", FORM | {"name": "night\r\nly"})

    assert response.status_code == 400
    assert two_lines.status_code == 400 and "one line of text" in two_lines.content.decode()
    page = response.content.decode()
    assert "Nothing was scheduled." in page
    assert "The hour “25” is not allowed (Invalid end range: 25 &gt; 23): write 0-23" in page
    assert "The minute “x” is not allowed (not a number)" in page
    assert not CampaignSchedule.objects.exists()


def test_others_see_the_schedule_but_not_its_buttons(users: dict[str, User], client_for: ClientFactory) -> None:
    schedule = nightly(users["otto"])
    olga = User.objects.create_user("olga")
    olga.groups.add(*users["otto"].groups.all())
    users["olga"] = olga
    client_for.users["olga"] = olga

    for who in ("vera", "olga"):
        page = client_for(who).get(f"/campaigns/{schedule.campaign_id}/").content.decode()
        assert "nightly ram vs hdd" in page and 'id="schedule-create"' not in page and "pause-schedule" not in page
        # Shown disabled, with why (runs/templatetags/controls.py), never as a form that posts.
        assert '<button type="button" id="schedule-new" disabled aria-describedby="schedule-new-refusal">' in page
        assert f'id="schedule-{schedule.pk}-pause" disabled' in page and "delete-schedule" not in page
    viewer = client_for("vera").get(f"/campaigns/{schedule.campaign_id}/").content.decode()
    assert "To schedule campaigns needs the operator role; you are a viewer." in viewer
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


ADMIN_FORM = {"name": "weekly", "times": "custom", "minute": "30", "hour": "3", "day_of_month": "*",
              "month_of_year": "*", "day_of_week": "sun"}  # fmt: skip


def staff(users: dict[str, User], name: str, like: str) -> None:
    """A staff account (the admin is open to staff) with `like`'s role: olga the operator, sam the viewer."""
    made = User.objects.create_user(name, is_staff=True)
    made.groups.add(*users[like].groups.all())
    users[name] = made


def test_the_admin_makes_changes_and_deletes_a_schedule_through_the_services(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    campaign = template(users["otto"])
    ada = client_for("ada")

    made = ada.post("/admin/runs/campaignschedule/add/", ADMIN_FORM | {"campaign": campaign.pk})

    schedule = CampaignSchedule.objects.select_related("periodic_task__crontab").get()
    assert made.status_code == 302, made.content.decode()[-3000:]
    assert (schedule.name, str(crontab_of_row(schedule.periodic_task.crontab))) == ("weekly", "30 3 * * sun")
    assert schedule.created_by == users["ada"] and schedule.periodic_task.args == f"[{schedule.pk}]"
    assert (
        AuditEvent.objects.filter(action=AuditAction.SCHEDULE_CREATED)
        .get()
        .message.startswith(f"campaign {campaign.pk} at “30 3 * * sun”")
    )
    shown = ada.get(f"/admin/runs/campaignschedule/{schedule.pk}/change/").content.decode()
    assert 'name="minute" value="30"' in shown and 'name="day_of_week" value="sun"' in shown

    changed = ada.post(
        f"/admin/runs/campaignschedule/{schedule.pk}/change/", ADMIN_FORM | {"times": "nightly", "name": "nightly"}
    )

    schedule = CampaignSchedule.objects.select_related("periodic_task__crontab").get()
    assert changed.status_code == 302 and not schedule.enabled  # "enabled" not ticked: paused
    assert (schedule.name, str(crontab_of_row(schedule.periodic_task.crontab))) == ("nightly", "0 2 * * *")
    said = AuditEvent.objects.filter(action=AuditAction.SCHEDULE_CHANGED).get().message
    assert said == "name “weekly” → “nightly”; times “30 3 * * sun” → “0 2 * * *”; paused"

    ada.post(f"/admin/runs/campaignschedule/{schedule.pk}/delete/", {"post": "yes"})

    assert not CampaignSchedule.objects.exists() and not PeriodicTask.objects.filter(task="runs.schedule_round")
    assert AuditEvent.objects.filter(action=AuditAction.SCHEDULE_DELETED).exists()


def test_the_admin_refuses_bad_times_and_another_s_campaign_and_writes_nothing(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    campaign = template(users["otto"])
    staff(users, "olga", like="otto")

    bad = client_for("ada").post(
        "/admin/runs/campaignschedule/add/", ADMIN_FORM | {"campaign": campaign.pk, "day_of_month": "31",
                                                           "month_of_year": "2"}
    )  # fmt: skip
    others = client_for("olga").post("/admin/runs/campaignschedule/add/", ADMIN_FORM | {"campaign": campaign.pk})

    assert bad.status_code == 200 and "These times never come" in bad.content.decode()
    assert others.status_code == 200
    assert "otto" in others.context["adminform"].form.errors["campaign"][0]
    assert not CampaignSchedule.objects.exists() and not PeriodicTask.objects.filter(task="runs.schedule_round")


def test_in_the_admin_another_operator_and_a_viewer_only_see_a_schedule(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    schedule = nightly(users["otto"])
    staff(users, "olga", like="otto")
    staff(users, "sam", like="vera")

    for who in ("olga", "sam"):
        client = client_for(who)
        shown = client.get(f"/admin/runs/campaignschedule/{schedule.pk}/change/")
        posted = client.post(f"/admin/runs/campaignschedule/{schedule.pk}/change/", ADMIN_FORM)
        deleted = client.post(f"/admin/runs/campaignschedule/{schedule.pk}/delete/", {"post": "yes"})
        assert shown.status_code == 200 and 'name="minute"' not in shown.content.decode(), who
        assert "0 2 * * *" in shown.content.decode(), who
        assert (posted.status_code, deleted.status_code) == (403, 403), who
    schedule.refresh_from_db()
    assert schedule.name == "nightly ram vs hdd" and schedule.enabled
    assert client_for("sam").get("/admin/runs/campaignschedule/add/").status_code == 403
