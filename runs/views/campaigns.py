"""Campaign pages: the list, the form (preview of the matrix and its wall time, then queue), and a
campaign's page (progress, the matrix with each run's state, statistics, cancel and retry)."""

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from runs.campaigns.matrix import MatrixError
from runs.campaigns.noise_advice import noise_advice, within_noise
from runs.campaigns.page_size_study import PageSizeChoice, page_size_choice
from runs.campaigns.plans import plan_from_forms
from runs.campaigns.preset_hosts import HostChoice, PresetRefused, host_choice, host_options, swept_hosts
from runs.campaigns.preset_sizing import branch_contention
from runs.campaigns.presets import PRESETS, page_size_initial, preset_initial
from runs.campaigns.selectors.canary import campaign_canaries
from runs.campaigns.selectors.overview import campaign_overview
from runs.campaigns.selectors.results import campaign_list, plan_wall_estimate, side_by_side
from runs.campaigns.services.campaigns import (
    CampaignForbidden,
    CampaignRefused,
    campaign_cancel,
    campaign_create,
    campaign_owner_refusal,
    campaign_refusal,
    campaign_retry_failed,
)
from runs.common.params import BadParameter, is_id, parse_choice, parse_id, parse_whole_number
from runs.compare.metrics import METRICS
from runs.compare.results_table import results_table
from runs.forms.campaigns import CampaignForm, MatrixForm
from runs.forms.method import MethodReasonForm
from runs.forms.runs import RunForm
from runs.forms.schedules import ScheduleForm
from runs.inventory.services.host_now import hosts_read_now
from runs.jobs import live
from runs.jobs.cancel import JobRefused
from runs.method.selectors import campaign_preview_method, compared_method
from runs.models import Campaign, CampaignConfiguration
from runs.notes.services.notes import notes_refusal
from runs.schedules.selectors import campaign_schedules
from runs.views.refusals import refused
from runs.watch.selectors import campaign_series


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def campaigns_page(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/campaign_list.html", {"campaigns": campaign_list(), "presets": PRESETS})


PageSizeAsked = tuple[HostChoice, PageSizeChoice]


def _page_size_asked(asked: QueryDict) -> PageSizeAsked | None:
    """The page-size preset's host (chosen, or the preset's default) and the source to build every
    page size from; None when no host can run it. A GET: it works without JS; a preview keeps
    them, hidden in the form, with the offer to build what is missing (views.studies)."""
    hosts = [parse_id(raw, "host") for raw in asked.getlist("host") if raw != ""]
    choice = host_choice(hosts, several=False, default=PRESETS["page-size"].default_host)
    return None if choice is None else (choice, page_size_choice(choice.server, asked.get("source")))


def _forms(
    request: HttpRequest, page_size: PageSizeAsked | None = None
) -> tuple[CampaignForm, RunForm, MatrixForm, list[int]]:
    """The three forms, and the hosts a preset was filled for (BadParameter, PresetRefused)."""
    if request.method == "POST":
        forms = CampaignForm(request.POST), RunForm(request.POST, prefix="base"), MatrixForm(request.POST)
        # The hosts the chooser shows ticked: the server's, then those of the devices swept.
        devices = [raw for raw in request.POST.getlist("device") if is_id(raw)]
        ticked = [request.POST.get("base-server_host", ""), *map(str, swept_hosts(devices))]
        return *forms, list(dict.fromkeys(int(pk) for pk in ticked if is_id(pk)))
    initial: dict[str, Any] = {"campaign": {}, "base": {}, "matrix": {}, "hosts": []}
    if page_size is not None:
        choice, study = page_size
        initial = page_size_initial(choice, study) | {"hosts": [host.pk for host in choice.hosts]}
    elif name := request.GET.get("preset"):
        hosts = [parse_id(raw, "host") for raw in request.GET.getlist("host") if raw != ""]
        initial = preset_initial(parse_choice(name, "preset", list(PRESETS)), hosts)
    return (
        CampaignForm(initial=initial["campaign"]),
        RunForm(initial=initial["base"], prefix="base"),
        MatrixForm(initial=initial["matrix"]),
        initial["hosts"],
    )


def _say_builds_missing(base_form: RunForm, page_size: PageSizeChoice | None) -> None:
    """A page-size study previewed before its builds exist has no install to preview: say that,
    and what to press, instead of "This field is required"."""
    study = page_size.study if page_size else None
    if study is None or study.source is None or not study.missing or "pg_install" not in base_form.errors:
        return
    base_form.errors["pg_install"] = base_form.error_class(
        [
            f"No build of {study.missing_text} pages from {study.source.label} yet, so there is nothing to "
            "preview: “Build …, then queue this study” builds them and queues the study as this form has it."
        ]
    )


def _host_picker(preset: str, chosen: list[int]) -> dict[str, Any] | None:
    """The preset's host chooser on the form: the hosts it may run on, those it may not and why."""
    if preset not in PRESETS:
        return None
    runnable, refused_hosts = host_options()
    return {"several": PRESETS[preset].several_hosts, "hosts": runnable, "refused": refused_hosts, "chosen": chosen}


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.queue_run", raise_exception=True)
def campaign_new(request: HttpRequest) -> HttpResponse:
    page_size = None
    asked = request.POST if request.method == "POST" else request.GET
    try:
        if asked.get("preset") == "page-size" and (request.method != "POST" or asked.get("source")):
            page_size = _page_size_asked(asked)
        campaign_form, base_form, matrix_form, hosts = _forms(request, page_size)
    except BadParameter as exc:
        return refused(request, str(exc))
    except PresetRefused as exc:
        return refused(request, f"The preset cannot be filled in for that choice of hosts. {exc}")
    reason_form = MethodReasonForm(request.POST if request.method == "POST" else None)
    context: dict[str, Any] = {
        "form": campaign_form,
        "base": base_form,
        "matrix": matrix_form,
        "reason_form": reason_form,
        "presets": PRESETS,
        "page_size": page_size[1] if page_size else None,
        # The page-size preset chooses its host with its source (the template's own chooser).
        "host_picker": None if page_size else _host_picker(asked.get("preset", ""), hosts),
    }
    if request.method != "POST":
        context["preset"] = request.GET.get("preset", "")
        return render(request, "runs/campaign_form.html", context)
    if not all(form.is_valid() for form in (campaign_form, base_form, matrix_form, reason_form)):
        _say_builds_missing(base_form, page_size[1] if page_size else None)
        return render(request, "runs/campaign_form.html", context, status=400)
    plan = plan_from_forms(campaign_form, base_form, matrix_form, request.POST.get("preset", "")[:50])
    plan = replace(plan, method_reason=reason_form.cleaned_data["method_reason"])
    try:
        cells = plan.cells()
    except MatrixError as exc:
        matrix_form.add_error(None, str(exc))
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
    if request.POST.get("action") == "check-hosts":  # read live, then the preview as it is now
        hosts = [pk for spec in specs for pk in (spec.server_host_id, *spec.client_host_ids)]
        context["hosts_unread"] = hosts_read_now(host_ids=hosts)
        context["hosts_checked"] = True
    method_warnings, host_checklist = campaign_preview_method(
        {n: cell.spec for n, cell in enumerate(cells, start=1) if cell.valid}
    )
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
        "contended": branch_contention(cells),
        "method_warnings": method_warnings,
        "host_checklist": host_checklist,
    }
    return render(request, "runs/campaign_form.html", context, status=400 if refusal else 200)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.select_related("created_by", "schedule"), pk=campaign_id)
    return campaign_page(request, campaign)


def campaign_page(
    request: HttpRequest, campaign: Campaign, schedule_form: ScheduleForm | None = None, status: int = 200
) -> HttpResponse:
    """The campaign's own page (`schedule_form`: the schedule form posted, with its errors)."""
    try:
        context = campaign_context(campaign, request.GET.get("baseline"))
    except BadParameter as exc:
        return refused(request, str(exc))
    context["series"] = campaign_series(campaign.pk)
    context["cancel_refusal"] = campaign_owner_refusal(request.user, campaign, "cancel")
    context["retry_refusal"] = campaign_owner_refusal(request.user, campaign, "retry")
    context["schedule_refusal"] = campaign_owner_refusal(request.user, campaign, "schedule")
    context["notes_refusal"] = notes_refusal(request.user, campaign)
    context["schedules"], context["tz"] = campaign_schedules(campaign), settings.TIME_ZONE
    context["schedule_form"] = schedule_form or ScheduleForm(initial={"name": campaign.name})
    return render(request, "runs/campaign_detail.html", context, status=status)


def campaign_context(campaign: Campaign, baseline_asked: str | None) -> dict[str, Any]:
    """What a campaign's page shows (its own page and its shared page), compared with the
    configuration asked for or the campaign's baseline; BadParameter for a bad one."""
    configurations = campaign.configurations.count()
    baseline = campaign.baseline_index
    if baseline_asked is not None:
        baseline = parse_whole_number(baseline_asked, "baseline", 0, max(configurations - 1, 0))
    events_after = live.last_event_id(live.run_list_stream())  # before the query: no state falls between
    overview = campaign_overview(campaign, baseline)
    runs, tables, confounds = overview.runs, overview.tables, overview.confounds
    repetitions = range(1, max([campaign.repetitions, *[r.repetition or 0 for r in runs]]) + 1)
    matrix = [
        (row.configuration, [row.attempts.get(r, []) for r in repetitions], row.unfinished) for row in overview.matrix
    ]
    method = compared_method(confounds.comparison) if confounds.comparison else []
    canaries = campaign_canaries(campaign) if campaign.fio_canary else None
    return {
        "campaign": campaign,
        "progress": overview.progress,
        "matrix": matrix,
        "adaptive": {c.index: state for c, state in overview.adaptive.items()},
        "repetitions": repetitions,
        "tables": tables,
        "side_by_side": side_by_side(tables),
        "statistics": [
            (table, [(row, *confounds.marker(row.configuration.index)) for row in table.rows]) for table in tables
        ],
        "warnings": confounds.warnings,
        "method": [*method, canaries.check] if canaries else method,
        "canaries": canaries,
        "results_table": results_table(confounds.comparison) if confounds.comparison else None,
        "results_csv": reverse("compare-export-csv") + "?" + urlencode({"campaign": campaign.pk, "what": "table"}),
        "report_url": reverse("compare-report") + "?" + urlencode({"campaign": campaign.pk}),
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
    except JobRefused as exc:
        return refused(request, str(exc), status=403)
    except CampaignRefused as exc:  # nothing left to cancel
        return refused(request, str(exc))
    return redirect("campaign-detail", campaign_id=campaign.pk)


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def campaign_retry_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    try:
        new_seeds = request.POST.get("new_seeds") == "on"  # unticked: each run again with its seed
        campaign_retry_failed(campaign=campaign, by=request.user, request=request, new_seeds=new_seeds)
    except CampaignForbidden as exc:
        return refused(request, str(exc), status=403)
    except CampaignRefused as exc:
        return refused(request, str(exc))
    return redirect("campaign-detail", campaign_id=campaign.pk)
