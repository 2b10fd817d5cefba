"""A schedule's rounds without beat or a worker: the firing beat's task calls, queued, skipped while
the previous round runs, refused with why (nothing written), paused; and beat's database scheduler
reading the schedule's task."""

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from benchlab.celery import app
from runs.campaigns.services.campaigns import campaign_create
from runs.models import AuditEvent, Campaign, CampaignSchedule, Device, Run, RunState, ScheduleRound
from runs.schedules.crontab import CRON_PRESETS, Crontab
from runs.schedules.services.rounds import schedule_fire
from runs.schedules.services.schedules import ScheduleForbidden, schedule_change, schedule_create, schedule_delete
from runs.tasks import schedule_round
from runs.tests.campaigns.test_campaigns import devices_and_options, lab1, plan_on

pytestmark = pytest.mark.django_db

NIGHTLY = CRON_PRESETS["nightly"].crontab


def template(owner: User) -> Campaign:
    host = lab1()
    return campaign_create(plan=plan_on(host, devices_and_options(host), repetitions=1), by=owner)


def nightly(owner: User, **fields: Any) -> CampaignSchedule:
    return schedule_create(campaign=template(owner), name="nightly ram vs hdd", crontab=NIGHTLY, by=owner, **fields)


def a_day_ago() -> None:
    """The firings so far were yesterday's (a firing moments after beat's is a second beat's)."""
    ScheduleRound.objects.update(at=timezone.now() - timedelta(days=1))


def end_runs(campaign: Campaign) -> None:
    campaign.runs.update(state=RunState.DONE)


def test_a_schedule_is_a_periodic_task_beat_reads_with_its_crontab(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])

    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert (task.name, task.task, task.args, task.enabled) == (
        f"campaign schedule {schedule.pk}",
        "runs.schedule_round",
        f"[{schedule.pk}]",
        True,
    )
    crontab = task.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year, crontab.day_of_week) == (
        "0",
        "2",
        "*",
        "*",
        "*",
    )
    assert str(crontab.timezone) == "UTC"
    event = AuditEvent.objects.get(action="schedule_created")
    assert event.actor_name == "otto" and event.message == f"campaign {schedule.campaign_id} at “0 2 * * *” (UTC)"


def test_beat_s_database_scheduler_sees_the_schedule_and_benchlab_s_own_periodic_tasks(
    users: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Beat closes connections that are not autocommitting: the test's own is one (its transaction).
    monkeypatch.setattr("django_celery_beat.schedulers.close_old_connections", lambda: None)
    every_quarter = schedule_create(
        campaign=template(users["otto"]), name="quarterly", crontab=Crontab(minute="*/15", hour="*"), by=users["otto"]
    )
    paused = schedule_create(
        campaign=every_quarter.campaign, name="paused", crontab=Crontab(minute="5", hour="*"), by=users["otto"]
    )
    schedule_change(schedule=paused, by=users["otto"], enabled=False)

    beat = DatabaseScheduler(app=app)  # as `celery beat` starts: CELERY_BEAT_SCHEDULE written to the database
    entries = beat.schedule

    entry = entries[f"campaign schedule {every_quarter.pk}"]
    assert (entry.task, entry.args) == ("runs.schedule_round", [every_quarter.pk])
    assert entry.schedule.minute == {0, 15, 30, 45} and entry.schedule.hour == set(range(24))
    assert f"campaign schedule {paused.pk}" not in entries
    assert entries["dispatch-queue"].task == "runs.dispatch_queue"
    assert entries["dispatch-queue"].schedule.run_every.total_seconds() == 30
    assert entries["sweep-stale-runs"].task == "runs.sweep_stale_runs"
    # A 02:00 crontab is read outside beat's window of hours too: its entry is celery's crontab.
    nightly_task = schedule_create(
        campaign=every_quarter.campaign, name="nightly", crontab=NIGHTLY, by=users["otto"]
    ).periodic_task
    nightly_entry = beat.Entry(nightly_task, app=app)
    assert nightly_entry.schedule.hour == {2} and nightly_entry.schedule.minute == {0}


def test_rounds_are_campaigns_of_their_own_numbered_1_2_and_skipped_while_the_last_runs(users: dict) -> None:
    schedule = nightly(users["otto"])

    assert schedule_round(schedule.pk) == "queued"  # the task beat sends
    first = Campaign.objects.get(schedule=schedule)
    assert (first.name, first.schedule_round, first.created_by) == ("nightly ram vs hdd · round 1", 1, users["otto"])
    assert first.runs.count() == schedule.campaign.runs.count() == 4
    assert set(first.runs.values_list("state", flat=True)) == {RunState.QUEUED}
    a_day_ago()

    skipped = schedule_fire(schedule_id=schedule.pk)
    assert skipped is not None and skipped.outcome == "skipped" and skipped.campaign is None
    assert skipped.message == f"Round 1 (campaign {first.pk}) still runs." and skipped.number == 1
    assert Campaign.objects.filter(schedule=schedule).count() == 1

    a_day_ago()
    end_runs(first)
    second = schedule_fire(schedule_id=schedule.pk)
    assert second is not None and second.outcome == "queued" and second.number == 2
    assert second.campaign is not None and second.campaign.schedule_round == 2
    assert second.campaign.name == "nightly ram vs hdd · round 2"
    schedule.refresh_from_db()
    assert (schedule.last_outcome, schedule.last_message) == ("queued", "")
    assert [f.outcome for f in ScheduleRound.objects.order_by("at", "pk")] == ["queued", "skipped", "queued"]


def test_a_second_beat_firing_the_same_minute_is_ignored(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])
    schedule_fire(schedule_id=schedule.pk)

    assert schedule_fire(schedule_id=schedule.pk) is None
    assert ScheduleRound.objects.count() == 1


def test_a_round_that_cannot_be_queued_says_why_and_writes_no_campaign(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])
    campaigns, runs = Campaign.objects.count(), Run.objects.count()
    Device.objects.filter(host__name="lab1").update(wipe_allowed=False)  # the template's devices withdrawn

    firing = schedule_fire(schedule_id=schedule.pk)

    assert firing is not None and firing.outcome == "refused" and firing.campaign is None
    assert firing.message.startswith("No combination of the values can run")
    assert "lab1:ram · noatime: device:" in firing.message and "wipe" in firing.message
    assert (Campaign.objects.count(), Run.objects.count()) == (campaigns, runs)
    schedule.refresh_from_db()
    assert schedule.last_outcome == "refused" and schedule.last_message == firing.message


def test_a_database_error_while_queueing_a_round_is_recorded_as_a_failed_firing(
    users: dict[str, User], monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = nightly(users["otto"])
    campaigns = Campaign.objects.count()

    def broken_plan(*args: object) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM a_table_that_is_not_there")

    monkeypatch.setattr("runs.schedules.services.rounds.plan_of_campaign", broken_plan)
    firing = schedule_fire(schedule_id=schedule.pk)

    assert firing is not None and firing.outcome == "failed" and firing.campaign is None
    assert firing.message.startswith('ProgrammingError: relation "a_table_that_is_not_there" does not exist')
    assert Campaign.objects.count() == campaigns
    schedule.refresh_from_db()
    assert schedule.last_outcome == "failed"


def test_a_round_of_a_creator_who_lost_the_operator_role_is_refused(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])
    users["otto"].groups.clear()

    firing = schedule_fire(schedule_id=schedule.pk)

    assert firing is not None and firing.outcome == "refused"
    assert firing.message == "otto, who made it, may no longer queue runs."


def test_a_paused_schedule_fires_nothing_and_resumed_fires_again(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])

    assert schedule_change(schedule=schedule, by=users["otto"], enabled=False) == ["paused"]
    assert not PeriodicTask.objects.get(pk=schedule.periodic_task_id).enabled
    assert schedule_fire(schedule_id=schedule.pk) is None
    assert not ScheduleRound.objects.exists() and not Campaign.objects.filter(schedule=schedule).exists()

    assert schedule_change(schedule=schedule, by=users["otto"], enabled=True) == ["resumed"]
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).enabled
    assert schedule_fire(schedule_id=schedule.pk).outcome == "queued"  # type: ignore[union-attr]
    assert [e.message for e in AuditEvent.objects.filter(action="schedule_changed").order_by("pk")] == [
        "paused", "resumed"
    ]  # fmt: skip


def test_run_now_goes_through_the_same_firing_and_is_audited(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])
    schedule_change(schedule=schedule, by=users["otto"], enabled=False)

    firing = schedule_fire(schedule_id=schedule.pk, by=users["otto"])  # asked for: also when paused

    assert firing is not None and firing.outcome == "queued" and firing.fired_by == users["otto"]
    assert AuditEvent.objects.get(action="schedule_fired").message == "round 1: queued"


def test_only_its_owner_or_an_admin_changes_a_schedule(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])
    other = User.objects.create_user("olga")
    other.groups.add(*users["otto"].groups.all())

    with pytest.raises(
        ScheduleForbidden, match="Only otto, who queued this schedule's campaign, or an admin can pause"
    ):
        schedule_change(schedule=schedule, by=other, enabled=False)
    with pytest.raises(ScheduleForbidden, match="needs the operator role"):
        schedule_fire(schedule_id=schedule.pk, by=users["vera"])
    with pytest.raises(ScheduleForbidden, match="Only otto, who queued this campaign, or an admin can schedule it"):
        schedule_create(campaign=schedule.campaign, name="mine", crontab=NIGHTLY, by=other)
    assert schedule_change(schedule=schedule, by=users["ada"], crontab=Crontab(minute="30", hour="3")) == [
        "times “0 2 * * *” → “30 3 * * *”"
    ]
    assert CampaignSchedule.objects.count() == 1


def test_deleting_a_schedule_removes_beat_s_task_and_keeps_its_rounds(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])
    schedule_fire(schedule_id=schedule.pk)
    task_id = schedule.periodic_task_id

    schedule_delete(schedule=schedule, by=users["otto"])

    assert not PeriodicTask.objects.filter(pk=task_id).exists()
    kept = Campaign.objects.get(name="nightly ram vs hdd · round 1")
    assert kept.schedule is None and kept.schedule_round == 1
    assert AuditEvent.objects.get(action="schedule_deleted").message.endswith("1 rounds kept")
