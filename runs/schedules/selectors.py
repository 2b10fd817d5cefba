"""Reads for schedules: the list, one schedule with its firings, a campaign's schedules; each in a
fixed number of queries. The next firing is celery's own reckoning from the crontab."""

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from runs.models import Campaign, CampaignSchedule, ScheduleRound
from runs.schedules.crontab import CRON_PRESETS, Crontab, crontab_of_row, next_firing

MAX_FIRINGS_SHOWN = 200


@dataclass(frozen=True)
class ScheduleView:
    schedule: CampaignSchedule
    crontab: Crontab
    preset: str  # the preset's title when the times are one, else ""
    next_at: datetime | None  # None: paused

    @property
    def times(self) -> str:
        return self.preset or f"crontab “{self.crontab}”"


def _schedules() -> QuerySet[CampaignSchedule]:
    return CampaignSchedule.objects.select_related("campaign", "created_by", "periodic_task__crontab")


def schedule_view(schedule: CampaignSchedule, now: datetime | None = None) -> ScheduleView:
    row = schedule.periodic_task.crontab
    crontab = crontab_of_row(row) if row is not None else Crontab()
    preset = next((p.title for p in CRON_PRESETS.values() if p.crontab == crontab), "")
    zone = ZoneInfo(settings.TIME_ZONE)
    next_at = next_firing(crontab, now or timezone.now(), zone) if schedule.enabled else None
    return ScheduleView(schedule=schedule, crontab=crontab, preset=preset, next_at=next_at)


def schedule_list() -> list[ScheduleView]:
    return [schedule_view(schedule) for schedule in _schedules()]


def schedule_get(schedule_id: int) -> CampaignSchedule | None:
    return _schedules().filter(pk=schedule_id).first()


def schedule_firings(schedule: CampaignSchedule) -> list[ScheduleRound]:
    """Its firings, newest first, each with the campaign it queued."""
    firings = ScheduleRound.objects.filter(schedule=schedule).select_related("campaign", "fired_by")
    return list(firings[:MAX_FIRINGS_SHOWN])


def campaign_schedules(campaign: Campaign) -> list[tuple[ScheduleView, list[ScheduleRound]]]:
    """The schedules that repeat this campaign, each with its firings (newest first)."""
    firings = Prefetch("firings", ScheduleRound.objects.select_related("campaign"))
    schedules = _schedules().filter(campaign=campaign).prefetch_related(firings)
    return [(schedule_view(schedule), list(schedule.firings.all())[:MAX_FIRINGS_SHOWN]) for schedule in schedules]
