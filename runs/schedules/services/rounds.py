"""A schedule's round: what beat's task (runs.schedule_round) and "Run a round now" both call.

The schedule's row is locked for the whole firing, so two firings at once queue one round: a second
beat's firing of the same minute (each worker may run beat) is ignored, and a person's "Run a round
now" meanwhile is recorded as skipped. Beat does not know whether the last
round still runs: the firing looks, and skips (recorded, with the round it waits for) while any of
that round's runs or fio jobs has not ended. A round is the template's plan expanded again and
queued by campaign_create as the schedule's creator: the same checks, the same FIFO queue; a
refusal is recorded with its reasons and writes nothing else.
"""

import logging
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.db.models import Max
from django.http import HttpRequest
from django.utils import timezone

from runs.campaigns.matrix import MatrixError
from runs.campaigns.plans import plan_of_campaign
from runs.campaigns.services.campaigns import CampaignPlan, CampaignRefused, campaign_create
from runs.common.services.audit import audit_record
from runs.models import (
    ENDED_BASELINE_STATES,
    FINAL_STATES,
    AuditAction,
    Campaign,
    CampaignSchedule,
    RoundOutcome,
    ScheduleRound,
)
from runs.schedules.services.schedules import ScheduleForbidden, schedule_refusal

logger = logging.getLogger(__name__)
SAME_FIRING_S = 30


def round_name(schedule: CampaignSchedule, number: int) -> str:
    return f"{schedule.name} · round {number}"[:200]


def _unfinished(campaign: Campaign) -> bool:
    runs = campaign.runs.exclude(state__in=FINAL_STATES)
    return runs.exists() or campaign.baselines.exclude(state__in=ENDED_BASELINE_STATES).exists()


def _fired_by_another_beat(schedule: CampaignSchedule) -> bool:
    """Beat fired this schedule moments ago: a second beat (one per worker) firing the same minute.
    A crontab's finest step is a minute, so two firings of its own are never this close."""
    since = timezone.now() - timedelta(seconds=SAME_FIRING_S)
    return schedule.firings.filter(fired_by__isnull=True, at__gt=since).exists()


def _why_refused(plan: CampaignPlan, refusal: str) -> str:
    """The refusal, and each configuration's reasons when none could run (the template's device
    gone or no longer wipeable, its install removed…)."""
    try:
        rejected = [cell for cell in plan.cells() if not cell.valid]
    except MatrixError:
        return refusal
    reasons = [f"{cell.label}: {'; '.join(cell.reasons())}" for cell in rejected[:5]]
    return " ".join([refusal, *reasons])


def _queue_round(
    schedule: CampaignSchedule, number: int, request: HttpRequest | None
) -> tuple[RoundOutcome, str, Campaign | None]:
    """(outcome, message, campaign) of queueing round `number`."""
    owner = schedule.created_by
    if owner is None or not owner.is_active:
        return RoundOutcome.REFUSED, "Its creator is no longer in benchlab: an operator must make it again.", None
    if not owner.has_perm("runs.queue_run"):
        return RoundOutcome.REFUSED, f"{owner.get_username()}, who made it, may no longer queue runs.", None
    try:
        plan = plan_of_campaign(schedule.campaign, round_name(schedule, number))
    except (MatrixError, ValueError, TypeError, KeyError) as exc:
        return RoundOutcome.REFUSED, f"Campaign {schedule.campaign_id}'s plan no longer reads: {exc}", None
    try:
        with transaction.atomic():  # a savepoint: a refusal half-way writes nothing
            campaign = campaign_create(plan=plan, by=owner, request=request)
            campaign.schedule, campaign.schedule_round = schedule, number
            campaign.save(update_fields=["schedule", "schedule_round"])
    except CampaignRefused as exc:
        return RoundOutcome.REFUSED, _why_refused(plan, str(exc)), None
    return RoundOutcome.QUEUED, "", campaign


def schedule_fire(
    *, schedule_id: int, by: AbstractBaseUser | AnonymousUser | None = None, request: HttpRequest | None = None
) -> ScheduleRound | None:
    """Fire the schedule once (beat, or `by` asking for a round now); the firing recorded, or None
    when the schedule is gone or paused and beat fired it (nothing to record: beat should not have).
    ScheduleForbidden when `by` may not run it."""
    user = by if isinstance(by, User) else None
    with transaction.atomic():
        schedule = (
            CampaignSchedule.objects.select_for_update(of=("self",))
            .select_related("campaign", "created_by")
            .filter(pk=schedule_id)
            .first()
        )
        if schedule is None:
            return None
        if by is not None and (refusal := schedule_refusal(by, schedule, "run")):
            raise ScheduleForbidden(refusal)
        last = schedule.rounds.aggregate(last=Max("schedule_round"))["last"] or 0
        previous = schedule.rounds.filter(schedule_round=last).first() if last else None
        campaign = None
        if by is None and (not schedule.enabled or _fired_by_another_beat(schedule)):
            return None  # paused since beat read it ("Run a round now" still may), or fired already
        if previous is not None and _unfinished(previous):
            outcome = RoundOutcome.SKIPPED
            message, number = f"Round {last} (campaign {previous.pk}) still runs.", last
        else:
            number = last + 1
            try:
                # A savepoint: a database error in it (reading the plan, say) leaves this transaction
                # usable, so the failed firing is still recorded below.
                with transaction.atomic():
                    outcome, message, campaign = _queue_round(schedule, number, request)
            except Exception as exc:  # recorded for the schedule's page, and logged
                logger.exception("schedule %s: round %s failed", schedule.pk, number)
                outcome, message, campaign = RoundOutcome.FAILED, f"{type(exc).__name__}: {exc}"[:2000], None
        firing = ScheduleRound.objects.create(
            schedule=schedule, outcome=outcome, message=message, number=number, campaign=campaign, fired_by=user
        )
        CampaignSchedule.objects.filter(pk=schedule.pk).update(
            last_outcome=outcome, last_message=message, last_fired_at=firing.at
        )
        if by is not None:
            said = f"round {number}: {outcome}" + (f" ({message})" if message else "")
            audit_record(action=AuditAction.SCHEDULE_FIRED, target=schedule, actor=user, request=request, message=said)
    return firing
