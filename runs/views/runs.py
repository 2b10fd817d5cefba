"""Run pages: the list, the queue form, a run (live while it runs, results when done)."""

from django.contrib.auth.decorators import permission_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from runs import live
from runs.forms import RunForm, run_form_initial
from runs.models import Run, RunArtifact
from runs.params import BadParameter, parse_id
from runs.roles import cancel_refusal
from runs.run_filters import RunFilterForm, filtered_run_page
from runs.selectors import run_chart_data, run_with_details
from runs.services.queue import run_wait
from runs.services.runs import CancelRefused, run_cancel, run_enqueue


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def runs_page(request: HttpRequest) -> HttpResponse:
    events_after = live.last_event_id(live.run_list_stream())  # before the query: no state falls between
    form = RunFilterForm(request.GET)
    page = filtered_run_page(form)
    context = {
        "form": form,
        "page": page,
        "events_after": events_after,
        # Only the newest runs, unfiltered, is where a run queued elsewhere belongs: reload for it.
        "reload_on_new": page is not None and page.number == 1 and not form.is_filtered(),
    }
    # Bad filters: the form again with what is wrong, above no table; 400 tells scripts it was refused.
    return render(request, "runs/run_list.html", context, status=200 if page is not None else 400)


def refused(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    """A page that says why the request was refused (400 bad input, 403 not allowed)."""
    heading = "Not allowed" if status == 403 else "That request cannot be answered"
    return render(request, "runs/refused.html", {"heading": heading, "message": message}, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.queue_run", raise_exception=True)
def run_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = RunForm(request.POST)
        if form.is_valid():
            run = form.save(commit=False)
            run.queued_by = request.user
            run_enqueue(run=run, request=request)
            return redirect("run-detail", run_id=run.pk)
        # The form again with each mistake beside its field; 400 tells scripts it was refused.
        return render(request, "runs/run_form.html", {"form": form}, status=400)
    source = None
    if again := request.GET.get("again"):
        try:
            source = get_object_or_404(Run, pk=parse_id(again, "again (the run to queue again)"))
        except BadParameter as exc:
            return refused(request, str(exc))
    form = RunForm(initial=run_form_initial(source) if source else None)
    return render(request, "runs/run_form.html", {"form": form})


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_with_details(run_id)
    context = {
        "run": run,
        "chart": run_chart_data(run),
        "cancel_refusal": cancel_refusal(request.user, run),
        "waits": [str(wait) for wait in run_wait(run)],
    }
    return render(request, "runs/run_detail.html", context)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_wait_json(request: HttpRequest, run_id: int) -> JsonResponse:
    """What a queued run waits for, for its page to refresh while it waits."""
    run = get_object_or_404(Run.objects.select_related("server_host", "client_host"), pk=run_id)
    return JsonResponse({"state": run.state, "waits": [str(wait) for wait in run_wait(run)]})


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_samples_json(request: HttpRequest, run_id: int) -> JsonResponse:
    run = get_object_or_404(Run, pk=run_id)
    return JsonResponse(run_chart_data(run))


@require_POST
@permission_required("runs.cancel_run", raise_exception=True)
def run_cancel_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("queued_by"), pk=run_id)
    try:
        run_cancel(run=run, by=request.user, request=request)
    except CancelRefused as exc:
        return refused(request, str(exc), status=403)
    return redirect("run-detail", run_id=run_id)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def run_artifact(request: HttpRequest, run_id: int, name: str) -> HttpResponse:
    artifact = RunArtifact.objects.filter(run_id=run_id, name=name).first()
    if artifact is None:
        raise Http404("no such output")
    response = HttpResponse(artifact.content, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run_id}-{name}"'
    return response
