"""Seed 001's study queued after the builds it lacks (campaigns.services.after_builds): the button on the
page-size preset's form, and the page that follows the builds until the campaign is queued."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from runs.campaigns.page_size_study import chosen_host
from runs.campaigns.services.after_builds import StudyRefused, study_after_builds_queue
from runs.common.params import BadParameter
from runs.models.studies import StudyAfterBuilds, StudyWaitState
from runs.views.refusals import refused

REFRESH_S = 5  # the page reloads while it waits; each build's own page is live
NOT_THE_FORM = ("csrfmiddlewaretoken", "action", "host", "source")


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def study_after_builds_new(request: HttpRequest) -> HttpResponse:
    """The preset form's "Build …, then queue this study": the whole campaign form as posted,
    with the chosen host and source."""
    try:
        host = chosen_host(request.POST.get("host", ""))
    except BadParameter as exc:
        return refused(request, str(exc))
    if host is None or not request.POST.get("source"):
        return refused(request, "Choose the host and the source to build the page sizes from (the preset's form).")
    data = {name: values for name, values in request.POST.lists() if name not in NOT_THE_FORM}
    try:
        wait = study_after_builds_queue(
            by=request.user, host=host, source_key=request.POST["source"], form_data=data, request=request
        )
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
        "started": set(wait.started_builds.values_list("pk", flat=True)),
        "cancelled": set(wait.cancelled_builds.values_list("pk", flat=True)),
        "waiting": wait.state == StudyWaitState.WAITING,
        "refresh_s": REFRESH_S,
    }
    return render(request, "runs/study_after_builds.html", context)
