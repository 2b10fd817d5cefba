"""PostgreSQL build pages: the list, the form, a build (live while it builds), remove (cancel:
views.cancel).

Viewers see builds; operators queue them and cancel or remove their own (admins anybody's), as
with runs.
"""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from runs.builds.services.builds import BuildRefused, build_refusal
from runs.builds.services.remove import BuildRemoveFailed, build_remove
from runs.common.paging import asked_page, page_or_last
from runs.common.params import BadParameter, parse_id
from runs.forms.builds import BuildForm, sources_of
from runs.jobs.cancel import job_cancel_refusal
from runs.jobs.progress import eta_seconds
from runs.jobs.selectors import HostWait, build_wait
from runs.lab.pgbuild.source import SOURCE_CACHE
from runs.models import BuildState, BuildStepName, Host, PgBuild, Run
from runs.views.refusals import refused

BUILDS_PER_PAGE = 50


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def builds_page(request: HttpRequest) -> HttpResponse:
    builds = PgBuild.objects.select_related("host", "queued_by", "pg_install").order_by("-created_at", "-id")
    try:
        number = asked_page(request.GET.get("page"))
    except BadParameter as exc:
        return refused(request, str(exc))
    page, past_the_end = page_or_last(Paginator(builds, BUILDS_PER_PAGE), number, "builds")
    return render(request, "runs/build_list.html", {"page": page, "past_the_end": past_the_end})


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.queue_run", raise_exception=True)
def build_new(request: HttpRequest) -> HttpResponse:
    """The form: the host first (?host=N, which lists that host's sources, asked of it live; the
    host's menu reloads the page, by script or by its button), then one of its sources."""
    if request.method == "POST":
        host = _enabled_host(request.POST.get("host"))
        form = BuildForm(request.POST, **sources_of(host))
        if form.is_valid():
            try:
                build, queued = form.queue(request.user, request)
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
        return render(request, "runs/build_form.html", _form_context(form, host), status=400)
    host = None
    if raw := request.GET.get("host"):
        try:
            host = get_object_or_404(Host, pk=parse_id(raw, "host (the host to build on)"))
        except BadParameter as exc:
            return refused(request, str(exc))
    initial = {"host": host.pk} if host else {}
    form = BuildForm(initial=initial, **sources_of(host if host and host.enabled else None))
    return render(request, "runs/build_form.html", _form_context(form, host))


def _enabled_host(raw: str | None) -> Host | None:
    """The enabled host a posted form names, or None (the form's host field then says why)."""
    try:
        return Host.objects.filter(enabled=True, pk=parse_id(raw or "", "host")).first()
    except BadParameter:
        return None


def _form_context(form: BuildForm, host: Host | None) -> dict[str, object]:
    return {
        "form": form,
        "host": host,
        "hosts": Host.objects.filter(enabled=True).order_by("name"),
        "tarball_dir": settings.PG_TARBALL_DIR,
        "source_cache": SOURCE_CACHE,
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
    at: datetime | None  # when it started
    ended: datetime | None  # when it ended; None while it runs (or not reached)


def step_rows(build: PgBuild) -> list[StepRow]:
    """The five steps, each with where the build is in them, and when each started and ended."""
    times = {name: (started, ended) for name, started, ended in build.step_times()}
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
        status = status if index <= reached else "pending"
        started, ended = times.get(step.value, (None, None))
        rows.append(StepRow(step.value, step.label, status, started, ended))
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
        "cancel_refusal": job_cancel_refusal(request.user, build),
        "remove_refusal": build_refusal(request.user, build, "remove"),
        "runs_using": Run.objects.filter(pg_install_id=build.pg_install_id).count() if build.pg_install_id else 0,
    }
    return render(request, "runs/build_detail.html", context)


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
