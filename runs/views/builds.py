"""PostgreSQL build pages: the list, the form, a build (live while it builds), cancel, remove.

Viewers see builds; operators queue them and cancel or remove their own (admins anybody's), as
with runs.
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from runs.build_forms import BuildForm, installed_packages
from runs.models import BuildState, BuildStepName, Host, PgBuild, Run
from runs.params import BadParameter, parse_id
from runs.queue_waits import HostWait, build_wait
from runs.services.build_observer import eta_seconds
from runs.services.build_remove import BuildRemoveFailed, build_remove
from runs.services.builds import BuildRefused, build_cancel, build_queue, build_refusal
from runs.views.runs import refused

BUILDS_PER_PAGE = 50


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def builds_page(request: HttpRequest) -> HttpResponse:
    builds = PgBuild.objects.select_related("host", "queued_by", "pg_install").order_by("-created_at", "-id")
    page = Paginator(builds, BUILDS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "runs/build_list.html", {"page": page})


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.queue_run", raise_exception=True)
def build_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = BuildForm(request.POST)
        if form.is_valid():
            try:
                build, queued = build_queue(
                    host=form.cleaned_data["host"], options=form.options(), by=request.user, request=request
                )
            except ValidationError as exc:  # the host takes no builds now
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                if queued:
                    messages.success(request, f"Build {build.pk} queued on {build.host.name}.")
                else:
                    messages.info(request, same_build_message(build))
                return redirect("build-detail", build_id=build.pk)
        # The form again with each mistake beside its field; 400 tells scripts it was refused.
        return render(request, "runs/build_form.html", _form_context(form), status=400)
    initial = {}
    if host := request.GET.get("host"):
        try:
            initial["host"] = get_object_or_404(Host, pk=parse_id(host, "host (the host to build on)")).pk
        except BadParameter as exc:
            return refused(request, str(exc))
    return render(request, "runs/build_form.html", _form_context(BuildForm(initial=initial)))


def _form_context(form: BuildForm) -> dict[str, object]:
    installed = installed_packages(Host.objects.filter(enabled=True))
    return {
        "form": form,
        "installed": installed,
        "packages": sorted({found.package for found in installed}),
        "versions": sorted({found.version for found in installed}),
    }


def same_build_message(build: PgBuild) -> str:
    """What a second request for the same options is told: which build it is, and what it does."""
    what = f"build {build.pk}, PostgreSQL {build.version} {build.block_size_kb} kB pages"
    if build.state == BuildState.DONE:
        return f"{build.host.name} already has this build: {what}. It is reused: nothing is built again."
    doing = "is building" if build.state == BuildState.BUILDING else "has queued"
    return f"{build.host.name} {doing} this build already: {what}. Its page follows it."


@dataclass(frozen=True)
class StepRow:
    name: str
    label: str
    status: str  # "done", "current", "failed", "stopped" (cancelled there), "pending"
    at: datetime | None


def step_rows(build: PgBuild) -> list[StepRow]:
    """The five steps, each with where the build is in them, and when it entered each."""
    entered = {name: parse_datetime(at) for name, at in build.steps}
    order = list(BuildStepName)
    if build.state in (BuildState.DONE, BuildState.REMOVED):
        reached = len(order)
    else:
        at = build.failed_step or build.step
        reached = order.index(BuildStepName(at)) if at else -1
    where = {BuildState.BUILDING: "current", BuildState.FAILED: "failed", BuildState.CANCELLED: "stopped"}
    rows = []
    for index, step in enumerate(order):
        status = "done" if index < reached else where.get(BuildState(build.state), "pending")
        rows.append(StepRow(step.value, step.label, status if index <= reached else "pending", entered.get(step.value)))
    return rows


def build_eta(build: PgBuild) -> int | None:
    """Seconds the current step still takes at its pace so far (make's estimate), or None."""
    if build.state != BuildState.BUILDING or build.progress is None or not build.steps:
        return None
    began = parse_datetime(build.steps[-1][1])
    return eta_seconds((timezone.now() - began).total_seconds(), build.progress) if began else None


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def build_detail(request: HttpRequest, build_id: int) -> HttpResponse:
    build = get_object_or_404(PgBuild.objects.select_related("host", "queued_by", "pg_install"), pk=build_id)
    waits: list[HostWait] = build_wait(build)
    context = {
        "build": build,
        "steps": step_rows(build),
        "waits": waits,
        "eta_s": build_eta(build),
        "cancel_refusal": build_refusal(request.user, build, "cancel"),
        "remove_refusal": build_refusal(request.user, build, "remove"),
        "runs_using": Run.objects.filter(pg_install_id=build.pg_install_id).count() if build.pg_install_id else 0,
    }
    return render(request, "runs/build_detail.html", context)


@require_POST
@permission_required("runs.cancel_run", raise_exception=True)
def build_cancel_view(request: HttpRequest, build_id: int) -> HttpResponse:
    build = get_object_or_404(PgBuild.objects.select_related("host", "queued_by"), pk=build_id)
    was_finished = build.is_finished
    try:
        build_cancel(build=build, by=request.user, request=request)
    except BuildRefused as exc:
        return refused(request, str(exc), status=403)
    if was_finished:
        messages.info(request, f"Build {build_id} had already ended ({build.get_state_display()}): nothing to cancel.")
    elif build.state == BuildState.CANCELLED:
        messages.success(request, f"Build {build_id} cancelled: it left the queue before anything ran.")
    else:
        messages.success(request, f"Cancel of build {build_id} requested: its worker stops it and cleans up.")
    return redirect("build-detail", build_id=build_id)


@require_POST
@permission_required("runs.cancel_run", raise_exception=True)
def build_remove_view(request: HttpRequest, build_id: int) -> HttpResponse:
    build = get_object_or_404(PgBuild.objects.select_related("host", "queued_by"), pk=build_id)
    if refusal := build_refusal(request.user, build, "remove"):
        return refused(request, refusal, status=403)
    try:
        messages.success(request, build_remove(build=build, by=request.user, request=request))
    except (BuildRefused, BuildRemoveFailed) as exc:
        messages.error(request, str(exc))
    return redirect("build-detail", build_id=build_id)
