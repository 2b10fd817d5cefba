"""Campaign pages: the list, the form (preview of the matrix and its wall time, then queue), and a
campaign's page (progress, the matrix with each run's state, statistics, cancel and retry)."""

from typing import Any

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from runs import live
from runs.campaign_forms import CampaignForm, SweepForm
from runs.campaign_plans import plan_from_forms
from runs.campaign_results import (
    METRICS,
    adaptive_status,
    campaign_list,
    campaign_matrix,
    campaign_progress,
    campaign_runs,
    campaign_statistics,
    plan_wall_estimate,
)
from runs.forms import RunForm
from runs.models import Campaign, CampaignConfiguration
from runs.noise_advice import noise_advice, within_noise
from runs.params import BadParameter, parse_choice, parse_whole_number
from runs.presets import PRESETS, page_size_study, preset_initial
from runs.services.campaigns import (
    CampaignForbidden,
    CampaignRefused,
    CancelRefused,
    campaign_cancel,
    campaign_create,
    campaign_owner_refusal,
    campaign_refusal,
    campaign_retry_failed,
)
from runs.sweep import SweepError
from runs.views.runs import refused


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def campaigns_page(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/campaign_list.html", {"campaigns": campaign_list(), "presets": PRESETS})


def _forms(request: HttpRequest) -> tuple[CampaignForm, RunForm, SweepForm]:
    if request.method == "POST":
        return CampaignForm(request.POST), RunForm(request.POST, prefix="base"), SweepForm(request.POST)
    initial: dict[str, dict[str, Any]] = {"campaign": {}, "base": {}, "sweep": {}}
    if name := request.GET.get("preset"):
        initial = preset_initial(parse_choice(name, "preset", list(PRESETS)))
    return (
        CampaignForm(initial=initial["campaign"]),
        RunForm(initial=initial["base"], prefix="base"),
        SweepForm(initial=initial["sweep"]),
    )


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.queue_run", raise_exception=True)
def campaign_new(request: HttpRequest) -> HttpResponse:
    try:
        campaign_form, base_form, sweep_form = _forms(request)
    except BadParameter as exc:
        return refused(request, str(exc))
    context: dict[str, Any] = {"form": campaign_form, "base": base_form, "sweep": sweep_form, "presets": PRESETS}
    if request.method != "POST":
        context["preset"] = request.GET.get("preset", "")
        if context["preset"] == "page-size" and (study := page_size_study()) and study.missing:
            context["builds_missing"] = study  # the form offers to build them first (views.studies)
        return render(request, "runs/campaign_form.html", context)
    if not all(form.is_valid() for form in (campaign_form, base_form, sweep_form)):
        return render(request, "runs/campaign_form.html", context, status=400)
    plan = plan_from_forms(campaign_form, base_form, sweep_form, request.POST.get("preset", "")[:50])
    try:
        cells = plan.cells()
    except SweepError as exc:
        sweep_form.add_error(None, str(exc))
        return render(request, "runs/campaign_form.html", context, status=400)
    refusal = campaign_refusal(plan, cells)
    if request.POST.get("action") == "queue" and refusal is None:
        try:
            campaign = campaign_create(plan=plan, by=request.user, request=request)
        except CampaignRefused as exc:  # the inventory changed between the preview and now
            refusal = str(exc)
        else:
            return redirect("campaign-detail", campaign_id=campaign.pk)
    valid = [cell for cell in cells if cell.valid]
    specs = [cell.spec for cell in valid]
    context |= {
        "cells": cells,
        "valid_count": len(valid),
        "run_count": len(valid) * plan.repetitions,
        "estimate": plan_wall_estimate(specs, plan.repetitions, plan.fresh_database) if valid else None,
        "estimate_most": (
            plan_wall_estimate(specs, plan.most_repetitions, plan.fresh_database)
            if valid and plan.max_repetitions
            else None
        ),
        "refusal": refusal,
        "preset": plan.preset,
    }
    return render(request, "runs/campaign_form.html", context, status=400 if refusal else 200)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.select_related("created_by"), pk=campaign_id)
    try:
        context = campaign_context(campaign, request.GET.get("baseline"))
    except BadParameter as exc:
        return refused(request, str(exc))
    context["cancel_refusal"] = campaign_owner_refusal(request.user, campaign, "cancel")
    context["retry_refusal"] = campaign_owner_refusal(request.user, campaign, "retry")
    return render(request, "runs/campaign_detail.html", context)


def campaign_context(campaign: Campaign, baseline_asked: str | None) -> dict[str, Any]:
    """What a campaign's page shows (its own page and its shared page), compared with the
    configuration asked for or the campaign's baseline; BadParameter for a bad one."""
    configurations = campaign.configurations.count()
    baseline = campaign.baseline_index
    if baseline_asked is not None:
        baseline = parse_whole_number(baseline_asked, "baseline", 0, max(configurations - 1, 0))
    events_after = live.last_event_id(live.run_list_stream())  # before the query: no state falls between
    runs = campaign_runs(campaign)
    repetitions = range(1, max([campaign.repetitions, *[r.repetition or 0 for r in runs]]) + 1)
    matrix = [
        (row.configuration, [row.attempts.get(r, []) for r in repetitions], row.unfinished)
        for row in campaign_matrix(campaign, runs)
    ]
    tables = campaign_statistics(campaign, runs, baseline) if configurations else []
    return {
        "campaign": campaign,
        "progress": campaign_progress(campaign, runs),
        "matrix": matrix,
        "adaptive": (
            {c.index: state for c, state in adaptive_status(campaign, runs).items()}
            if campaign.target_ci_pct is not None
            else {}
        ),
        "repetitions": repetitions,
        "tables": tables,
        "noise": noise_advice(tables[0], campaign.target_ci_pct) if tables else [],
        "within_noise": within_noise(tables[0]) if tables else [],
        "baseline": baseline,
        "metrics": METRICS,
        "events_after": events_after,
        "run_ids": [run.pk for run in runs],
    }


@require_POST
@permission_required("runs.cancel_run", raise_exception=True)
def campaign_cancel_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    configuration = None
    if request.POST.get("configuration", "") != "":
        try:
            index = parse_whole_number(request.POST["configuration"], "configuration", 0, 10**6)
        except BadParameter as exc:
            return refused(request, str(exc))
        configuration = get_object_or_404(CampaignConfiguration, campaign=campaign, index=index)
    try:
        campaign_cancel(campaign=campaign, by=request.user, configuration=configuration, request=request)
    except CancelRefused as exc:
        return refused(request, str(exc), status=403)
    except CampaignRefused as exc:  # nothing left to cancel
        return refused(request, str(exc))
    return redirect("campaign-detail", campaign_id=campaign.pk)


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def campaign_retry_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    try:
        campaign_retry_failed(campaign=campaign, by=request.user, request=request)
    except CampaignForbidden as exc:
        return refused(request, str(exc), status=403)
    except CampaignRefused as exc:
        return refused(request, str(exc))
    return redirect("campaign-detail", campaign_id=campaign.pk)
