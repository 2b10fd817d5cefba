"""Writes for campaign schedules: create, change (name, times, paused), delete; each audited.

A schedule's times live in beat's own tables (django_celery_beat): a PeriodicTask per schedule,
sending `runs.schedule_round` with the schedule's id, on a CrontabSchedule in the site's time zone.
Only this module writes them, so the schedule and the task beat reads always agree. Crontab rows
are shared and never changed: new times point the task at another row.
"""

import json
import uuid
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.http import HttpRequest
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from runs.campaigns.services.campaigns import campaign_owner_refusal
from runs.common.roles import owner_refusal
from runs.common.services.audit import audit_record
from runs.models import AuditAction, Campaign, CampaignSchedule
from runs.schedules.crontab import Crontab, crontab_of_row

ROUND_TASK = "runs.schedule_round"  # runs/tasks.py:schedule_round


class ScheduleForbidden(Exception):
    """The user may not do this to the schedule; str() says who may."""


def schedule_refusal(user: AbstractBaseUser | AnonymousUser, schedule: CampaignSchedule, doing: str) -> str | None:
    """Why `user` may not `doing` (pause, change, delete, run) `schedule`, or None: the operator
    who made it or whose campaign it repeats, and admins."""
    by_campaign = owner_refusal(user, schedule.campaign.created_by, "campaign", doing, "runs.queue_run")
    if by_campaign is None or owner_refusal(user, schedule.created_by, "schedule", doing, "runs.queue_run") is None:
        return None
    return by_campaign.replace("this campaign", "this schedule's campaign")


def _crontab_row(crontab: Crontab) -> CrontabSchedule:
    row, _ = CrontabSchedule.objects.get_or_create(**crontab.as_dict(), timezone=ZoneInfo(settings.TIME_ZONE))
    return row


def schedule_create(
    *,
    campaign: Campaign,
    name: str,
    crontab: Crontab,
    by: AbstractBaseUser | AnonymousUser,
    request: HttpRequest | None = None,
) -> CampaignSchedule:
    """Repeat `campaign` at `crontab`'s times (checked by crontab.crontab_errors); ScheduleForbidden
    for anyone but the campaign's owner and admins."""
    if refusal := campaign_owner_refusal(by, campaign, "schedule"):
        raise ScheduleForbidden(refusal)
    user = by if isinstance(by, User) else None
    with transaction.atomic():
        # Its name and arguments need the schedule's id: written once the schedule has one.
        task = PeriodicTask.objects.create(
            name=f"campaign schedule (new {uuid.uuid4().hex})", task=ROUND_TASK, crontab=_crontab_row(crontab)
        )
        schedule = CampaignSchedule.objects.create(campaign=campaign, periodic_task=task, name=name, created_by=user)
        task.name, task.args = f"campaign schedule {schedule.pk}", json.dumps([schedule.pk])
        task.description = f"{name}: repeats campaign {campaign.pk}"
        task.save()
        audit_record(
            action=AuditAction.SCHEDULE_CREATED,
            target=schedule,
            actor=user,
            request=request,
            message=f"campaign {campaign.pk} at “{crontab}” ({settings.TIME_ZONE})",
        )
    return schedule


def schedule_change(
    *,
    schedule: CampaignSchedule,
    by: AbstractBaseUser | AnonymousUser,
    request: HttpRequest | None = None,
    name: str | None = None,
    crontab: Crontab | None = None,
    enabled: bool | None = None,
) -> list[str]:
    """Rename, retime, pause (enabled False) or resume it; what changed, in words (audited)."""
    doing = "change" if enabled is None else ("resume" if enabled else "pause")
    if refusal := schedule_refusal(by, schedule, doing):
        raise ScheduleForbidden(refusal)
    with transaction.atomic():
        schedule = (
            CampaignSchedule.objects.select_for_update(of=("self",))
            .select_related("periodic_task__crontab")
            .get(pk=schedule.pk)
        )
        task = schedule.periodic_task
        changes = []
        if name is not None and name != schedule.name:
            changes.append(f"name “{schedule.name}” → “{name}”")
            schedule.name = name
        if crontab is not None and task.crontab is not None and crontab != crontab_of_row(task.crontab):
            changes.append(f"times “{crontab_of_row(task.crontab)}” → “{crontab}”")
            task.crontab = _crontab_row(crontab)
        if enabled is not None and enabled != schedule.enabled:
            changes.append("resumed" if enabled else "paused")
            schedule.enabled = task.enabled = enabled
        if changes:
            schedule.save()
            task.save()  # save(), not update(): its signal tells beat the schedule changed
            user = by if isinstance(by, User) else None
            audit_record(
                action=AuditAction.SCHEDULE_CHANGED, target=schedule, actor=user, request=request,
                message="; ".join(changes),
            )  # fmt: skip
    return changes


def schedule_delete(
    *, schedule: CampaignSchedule, by: AbstractBaseUser | AnonymousUser, request: HttpRequest | None = None
) -> None:
    """Delete the schedule and its beat task; its rounds stay, as campaigns of their own."""
    if refusal := schedule_refusal(by, schedule, "delete"):
        raise ScheduleForbidden(refusal)
    user = by if isinstance(by, User) else None
    with transaction.atomic():
        task = schedule.periodic_task
        audit_record(
            action=AuditAction.SCHEDULE_DELETED,
            target=schedule,
            actor=user,
            request=request,
            message=f"repeated campaign {schedule.campaign_id}; {schedule.rounds.count()} rounds kept",
        )
        schedule.delete()
        task.delete()
