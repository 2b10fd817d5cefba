"""Run pages: the list, the queue form, a run (live while it runs, results when done). Cancelling
one is views.cancel."""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.decorators import permission_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from runs.bench.selectors.list_rows import run_rows
from runs.bench.selectors.list_sort import sort_headers
from runs.bench.selectors.run_page import (
    run_chart_data,
    run_log,
    run_outputs,
    run_position,
    run_waits,
    run_with_details,
)
from runs.bench.services.runs import run_enqueue
from runs.bench.specs import RunSpec
from runs.common.params import BadParameter, parse_id
from runs.common.roles import cancel_refusal
from runs.compare.query import MAX_RUNS
from runs.forms.method import MethodReasonForm
from runs.forms.run_filters import RunListFilter, filtered_run_page
from runs.forms.runs import RunForm, run_form_initial
from runs.jobs import live
from runs.method.selectors import run_method, spec_method
from runs.method.services.acceptance import accepted_when_queued
from runs.models import AuditAction, AuditEvent, PgInstall, Run, RunArtifact, RunState
from runs.notes.services.notes import notes_refusal
from runs.views.refusals import refused
from runs.watch.selectors import recurring_series


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def runs_page(request: HttpRequest) -> HttpResponse:
    events_after = live.last_event_id(live.run_list_stream())  # before the query: no state falls between
    chosen = RunListFilter(request.GET)
    page, form = filtered_run_page(chosen), chosen.list_form
    context = {
        "form": form,
        "page": page,
        "rows": run_rows(list(page)) if page is not None else [],
        "sort_headers": sort_headers(request.GET, form.cleaned_data.get("sort") or "") if page is not None else {},
        "events_after": events_after,
        "compare_most": MAX_RUNS,
        # Only the newest runs, unfiltered, is where a run queued elsewhere belongs: reload for it.
        "reload_on_new": page is not None and page.number == 1 and form.lists_newest_first(),
    }
    # Bad filters: the form again with what is wrong, above no table; 400 tells scripts it was refused.
    return render(request, "runs/run_list.html", context, status=200 if page is not None else 400)


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.queue_run", raise_exception=True)
def run_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _run_new_posted(request)
    source, initial = None, None
    try:
        if again := request.GET.get("again"):
            source = get_object_or_404(Run, pk=parse_id(again, "again (the run to queue again)"))
            initial = run_form_initial(source)
        elif chosen := request.GET.get("pg_install"):  # "queue a run with it", from a build's page
            install = get_object_or_404(PgInstall, pk=parse_id(chosen, "pg_install"), removed_at__isnull=True)
            initial = {"server_host": install.host_id, "pg_install": install.pk}
    except BadParameter as exc:
        return refused(request, str(exc))
    # Run again: its method checks at once, as the run it repeats asks for it.
    method = spec_method(RunSpec.from_run(source)) if source else None
    context = {"form": RunForm(initial=initial), "reason_form": MethodReasonForm(), "method": method}
    return render(request, "runs/run_form.html", context)


def _run_new_posted(request: HttpRequest) -> HttpResponse:
    """Queue the run; with "check", show its method checks instead (nothing is queued)."""
    form, reason_form = RunForm(request.POST), MethodReasonForm(request.POST)
    if not (form.is_valid() and reason_form.is_valid()):
        # The form again with each mistake beside its field; 400 tells scripts it was refused.
        return render(request, "runs/run_form.html", {"form": form, "reason_form": reason_form}, status=400)
    method = spec_method(RunSpec.from_form_data(form.cleaned_data))
    if "check" in request.POST:
        return render(request, "runs/run_form.html", {"form": form, "reason_form": reason_form, "method": method})
    run = form.save(commit=False)
    run.queued_by = request.user
    run.method_overrides = accepted_when_queued(method, reason_form.cleaned_data["method_reason"], request.user)
    run_enqueue(run=run, client_host_ids=form.cleaned_data["client_hosts"], request=request)
    return redirect("run-detail", run_id=run.pk)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_with_details(run_id)
    context = {
        "run": run,
        "chart": run_chart_data(run),
        "cancellation": run_cancellation(run),
        "cancel_refusal": cancel_refusal(request.user, run),
        "waits": run_waits(run),
        "position": run_position(run),
        "outputs": run_outputs(run),
        "log": run_log(run) if run.is_finished else [],
        "method": run_method(run),
        "series": recurring_series([run]).get(run.pk),
        "notes_refusal": notes_refusal(request.user, run),
    }
    return render(request, "runs/run_detail.html", context)


@dataclass(frozen=True)
class Cancellation:
    """Who cancelled a run, when, and at which of its steps."""

    at: datetime | None
    by: str | None  # None: no audit event names anybody (a run cancelled before the audit log)
    during: str  # the step it was at when the cancel came: "measuring", "queued"; "" if not known


def run_cancellation(run: Run) -> Cancellation | None:
    """A cancelled run's cancel, from its audit event (who, when) and its steps (at which one);
    one query, the steps being prefetched (bench.selectors.run_page.run_with_details). None for any other run."""
    if run.state != RunState.CANCELLED:
        return None
    event = (
        AuditEvent.objects.filter(action=AuditAction.RUN_CANCELLED, object_type="run", object_id=str(run.pk))
        .order_by("at", "id")
        .only("at", "actor_name")
        .first()
    )
    steps = list(run.transitions.all())
    ended = next((step.at for step in reversed(steps) if step.state == RunState.CANCELLED), run.finished_at)
    at = event.at if event else ended
    before = [step for step in steps if step.state != RunState.CANCELLED and (at is None or step.at <= at)]
    if before:
        during = before[-1].get_state_display()
    else:  # no step recorded before it: queued if it never started, else not known
        during = RunState.QUEUED.label if run.started_at is None else ""
    return Cancellation(at, event.actor_name if event else None, during)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_wait_json(request: HttpRequest, run_id: int) -> JsonResponse:
    """What a queued run waits for, for its page to refresh while it waits."""
    runs = Run.objects.select_related("server_host").prefetch_related("run_clients__host")
    run = get_object_or_404(runs, pk=run_id)
    waits = run_waits(run)
    return JsonResponse(
        {
            "state": run.state,
            "waits": [wait.text for wait in waits],
            "hosts": [{"host": w.host, "state": w.state, "queue": w.queue, "busy_with": w.busy_with} for w in waits],
        }
    )


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_samples_json(request: HttpRequest, run_id: int) -> JsonResponse:
    run = get_object_or_404(Run, pk=run_id)
    return JsonResponse(run_chart_data(run))


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_artifact(request: HttpRequest, run_id: int, name: str) -> HttpResponse:
    """A raw output as text: shown in the browser, or saved as a file with ?download=1."""
    download = request.GET.get("download")
    if download is not None and download != "1":
        message = f"download must be 1 (save the file) or left out (show it in the browser), not {download[:40]!r}"
        return refused(request, message)
    artifact = RunArtifact.objects.filter(run_id=run_id, name=name).first()
    if artifact is None:
        raise Http404("no such output")
    response = HttpResponse(artifact.content, content_type="text/plain; charset=utf-8")
    # A text file is shown as text, never sniffed into HTML or a script, whatever it contains.
    response["X-Content-Type-Options"] = "nosniff"
    disposition = "attachment" if download else "inline"
    response["Content-Disposition"] = f'{disposition}; filename="run-{run_id}-{name}"'
    return response
