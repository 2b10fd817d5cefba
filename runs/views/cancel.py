"""Cancelling a job from its page: one view for runs, PostgreSQL builds and fio baselines
(runs.jobs.cancel does the cancel). Each kind keeps its URL (run-cancel, build-cancel,
baseline-cancel: runs.urls, runs.urls_devices), which names its kind, and comes back to the
job's page saying what became of the job."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from runs.jobs.cancel import Cancelled, JobRefused, job_cancel
from runs.jobs.kinds import BASELINE, BUILD, KINDS, RUN
from runs.views.refusals import refused

# What the page says after a cancel ({pk}: the job's id; {state}: the state it had ended in). A run
# and a build are told alike; a baseline names fio, what its worker runs.
SAID: dict[str, dict[Cancelled, str]] = {
    RUN: {
        Cancelled.HAD_ENDED: "Run {pk} had already ended ({state}): nothing to cancel.",
        Cancelled.LEFT_QUEUE: "Run {pk} cancelled: it left the queue before anything ran.",
        Cancelled.STOPPING: "Cancel of run {pk} requested: its worker stops it and cleans up.",
    },
    BUILD: {
        Cancelled.HAD_ENDED: "Build {pk} had already ended ({state}): nothing to cancel.",
        Cancelled.LEFT_QUEUE: "Build {pk} cancelled: it left the queue before anything ran.",
        Cancelled.STOPPING: "Cancel of build {pk} requested: its worker stops it and cleans up.",
    },
    BASELINE: {
        Cancelled.HAD_ENDED: "Baseline {pk} had already ended ({state}).",
        Cancelled.LEFT_QUEUE: "Baseline {pk} cancelled: it left the queue before fio ran.",
        Cancelled.STOPPING: "Cancel of baseline {pk} requested: its worker stops fio and cleans up.",
    },
}


@require_POST
@permission_required("runs.cancel_run", raise_exception=True)
def job_cancel_view(request: HttpRequest, kind: str, **url_ids: int) -> HttpResponse:
    """POST …/<id>/cancel: the URL gives `kind` and the job's id as <kind>_id (run_id, …)."""
    job_id = url_ids[f"{kind}_id"]
    job: Any = get_object_or_404(KINDS[kind].model._default_manager.select_related("queued_by"), pk=job_id)
    try:
        cancelled = job_cancel(job, by=request.user, request=request)
    except JobRefused as exc:
        return refused(request, str(exc), status=403)
    said = SAID[kind][cancelled].format(pk=job_id, state=job.get_state_display())
    level = messages.INFO if cancelled == Cancelled.HAD_ENDED else messages.SUCCESS
    messages.add_message(request, level, said)
    return redirect(f"{kind}-detail", job_id)
