"""The method checks' pages: accepting a run's warning with a reason, and the page that explains
each check (what it reads, why it matters, what to change, and where the advice comes from)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from runs.common.roles import owner_refusal
from runs.method.services.acceptance import AcceptRefused, method_warning_accept
from runs.models import Run
from runs.views.refusals import refused


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def run_method_accept(request: HttpRequest, run_id: int) -> HttpResponse:
    """POST runs/<id>/method/accept with `check` and `reason`: the warning stays, with who accepted it and why."""
    run = get_object_or_404(Run.objects.select_related("server_host", "queued_by"), pk=run_id)
    # As with a cancel: an operator judges their own runs, an admin anybody's.
    if refusal := owner_refusal(request.user, run.queued_by, "run", "accept a warning of", "runs.queue_run"):
        return refused(request, refusal, status=403)
    try:
        method_warning_accept(run, request.POST.get("check", ""), request.POST.get("reason", ""), request.user, request)
    except AcceptRefused as exc:
        return refused(request, str(exc))
    messages.success(request, f"Run {run.pk}: the warning is accepted, with your reason.")
    return redirect(reverse("run-detail", args=[run.pk]) + "#method")


@login_not_required  # linked from shared pages: it explains, and shows no lab data
@require_safe
def method_help(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/method_help.html")
