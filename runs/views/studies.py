"""Seed 001's study queued after the builds it lacks (services.after_builds): the button on the
page-size preset's form, and the page that follows the builds until the campaign is queued."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from runs.models.studies import StudyAfterBuilds, StudyWaitState
from runs.services.after_builds import StudyRefused, study_after_builds_queue
from runs.views.runs import refused

REFRESH_S = 5  # the page reloads while it waits; each build's own page is live


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def study_after_builds_new(request: HttpRequest) -> HttpResponse:
    try:
        wait = study_after_builds_queue(by=request.user, request=request)
    except StudyRefused as exc:
        return refused(request, f"The page-size study's builds could not be queued: {exc}.")
    if wait.campaign_id is not None:
        return redirect("campaign-detail", campaign_id=wait.campaign_id)
    return redirect("study-after-builds", study_id=wait.pk)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def study_after_builds_page(request: HttpRequest, study_id: int) -> HttpResponse:
    wait = get_object_or_404(StudyAfterBuilds.objects.select_related("host", "campaign", "created_by"), pk=study_id)
    context = {
        "wait": wait,
        "builds": wait.builds.order_by("block_size_kb"),
        "waiting": wait.state == StudyWaitState.WAITING,
        "refresh_s": REFRESH_S,
    }
    return render(request, "runs/study_after_builds.html", context)
