"""Run pages: the list, the queue form, a run (live while it runs, results when done)."""

from django.contrib.auth.decorators import permission_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from runs import live
from runs.forms import RunForm, run_form_initial
from runs.models import Run, RunArtifact
from runs.selectors import run_chart_data, run_list, run_with_details
from runs.services.runs import run_cancel, run_enqueue


@permission_required("runs.view_host", raise_exception=True)
def runs_page(request: HttpRequest) -> HttpResponse:
    events_after = live.last_event_id(live.run_list_stream())  # before the query: no state falls between
    return render(request, "runs/run_list.html", {"runs": run_list(), "events_after": events_after})


@permission_required("runs.queue_run", raise_exception=True)
def run_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = RunForm(request.POST)
        if form.is_valid():
            run = form.save(commit=False)
            run.queued_by = request.user
            run_enqueue(run=run)
            return redirect("run-detail", run_id=run.pk)
    else:
        again = request.GET.get("again")
        source = get_object_or_404(Run, pk=again) if again and again.isdigit() else None
        form = RunForm(initial=run_form_initial(source) if source else None)
    return render(request, "runs/run_form.html", {"form": form})


@permission_required("runs.view_host", raise_exception=True)
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_with_details(run_id)
    return render(request, "runs/run_detail.html", {"run": run, "chart": run_chart_data(run)})


@permission_required("runs.view_host", raise_exception=True)
def run_samples_json(request: HttpRequest, run_id: int) -> JsonResponse:
    run = get_object_or_404(Run, pk=run_id)
    return JsonResponse(run_chart_data(run))


@require_POST
@permission_required("runs.cancel_run", raise_exception=True)
def run_cancel_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run_cancel(run=get_object_or_404(Run, pk=run_id))
    return redirect("run-detail", run_id=run_id)


@permission_required("runs.view_host", raise_exception=True)
def run_artifact(request: HttpRequest, run_id: int, name: str) -> HttpResponse:
    artifact = RunArtifact.objects.filter(run_id=run_id, name=name).first()
    if artifact is None:
        raise Http404("no such output")
    response = HttpResponse(artifact.content, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run_id}-{name}"'
    return response
