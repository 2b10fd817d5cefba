"""Campaign schedules: the list, a schedule's page (its times, next round, firings; change, pause,
resume, delete, run a round now), and "Repeat on a schedule" posted from a campaign's page."""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import permission_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from runs.campaigns.services.campaigns import campaign_owner_refusal
from runs.common.params import BadParameter, parse_choice
from runs.forms.schedules import ScheduleForm
from runs.models import Campaign, CampaignSchedule
from runs.notify.selectors import schedule_failures, schedule_subscribers
from runs.schedules.selectors import schedule_firings, schedule_get, schedule_list, schedule_view
from runs.schedules.services.rounds import schedule_fire
from runs.schedules.services.schedules import (
    ScheduleForbidden,
    schedule_change,
    schedule_create,
    schedule_delete,
    schedule_refusal,
)
from runs.views.campaigns import campaign_page
from runs.views.refusals import refused


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def schedules_page(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/schedule_list.html", {"schedules": schedule_list(), "tz": settings.TIME_ZONE})


def _schedule(schedule_id: int) -> CampaignSchedule:
    schedule = schedule_get(schedule_id)
    if schedule is None:
        raise Http404("No such schedule.")
    return schedule


def secret_key(schedule_id: int) -> str:
    return f"schedule_{schedule_id}_new_webhook_secret"


def _detail(request: HttpRequest, schedule: CampaignSchedule, form: ScheduleForm | None = None) -> dict[str, Any]:
    view = schedule_view(schedule)
    return {
        "view": view,
        "schedule": schedule,
        "firings": schedule_firings(schedule),
        "form": form or ScheduleForm.of(view.crontab, schedule.name),
        "refusal": schedule_refusal(request.user, schedule, "change"),
        "tz": settings.TIME_ZONE,
        "subscribers": schedule_subscribers(schedule.pk),
        # A webhook's secret, from the subscribing just before (runs.views.subscribers): shown once.
        "new_secret": request.session.pop(secret_key(schedule.pk), ""),
        "delivery_failures": schedule_failures(schedule.pk),
    }


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def schedule_detail(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return render(request, "runs/schedule_detail.html", _detail(request, _schedule(schedule_id)))


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def schedule_new(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.select_related("created_by"), pk=campaign_id)
    if refusal := campaign_owner_refusal(request.user, campaign, "schedule"):
        return refused(request, refusal, status=403)
    form = ScheduleForm(request.POST)
    if not form.is_valid():
        return campaign_page(request, campaign, schedule_form=form, status=400)
    schedule = schedule_create(
        campaign=campaign, name=form.cleaned_data["name"], crontab=form.crontab(), by=request.user, request=request
    )
    return redirect("schedule-detail", schedule_id=schedule.pk)


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def schedule_edit(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = _schedule(schedule_id)
    form = ScheduleForm(request.POST)
    if not form.is_valid():
        return render(request, "runs/schedule_detail.html", _detail(request, schedule, form), status=400)
    try:
        schedule_change(
            schedule=schedule, by=request.user, request=request, name=form.cleaned_data["name"], crontab=form.crontab()
        )
    except ScheduleForbidden as exc:
        return refused(request, str(exc), status=403)
    return redirect("schedule-detail", schedule_id=schedule.pk)


def _act(request: HttpRequest, schedule_id: int, act: Callable[[CampaignSchedule], object]) -> HttpResponse:
    """Do `act` to the schedule as the request's user, then show its page (or why not)."""
    schedule = _schedule(schedule_id)
    try:
        act(schedule)
    except BadParameter as exc:
        return refused(request, str(exc))
    except ScheduleForbidden as exc:
        return refused(request, str(exc), status=403)
    if not CampaignSchedule.objects.filter(pk=schedule.pk).exists():  # deleted: back to its campaign
        return redirect("campaign-detail", campaign_id=schedule.campaign_id)
    return redirect("schedule-detail", schedule_id=schedule.pk)


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def schedule_enable(request: HttpRequest, schedule_id: int) -> HttpResponse:
    """Pause (enabled=no) or resume (enabled=yes)."""

    def enable(schedule: CampaignSchedule) -> None:
        enabled = parse_choice(request.POST.get("enabled", ""), "enabled", ("yes", "no")) == "yes"
        schedule_change(schedule=schedule, by=request.user, request=request, enabled=enabled)

    return _act(request, schedule_id, enable)


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def schedule_run_now(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(
        request, schedule_id, lambda schedule: schedule_fire(schedule_id=schedule.pk, by=request.user, request=request)
    )


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def schedule_delete_view(request: HttpRequest, schedule_id: int) -> HttpResponse:
    return _act(
        request, schedule_id, lambda schedule: schedule_delete(schedule=schedule, by=request.user, request=request)
    )
