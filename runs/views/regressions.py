"""The regressions page: stored change points (runs.watch.regressions.selectors), the open ones first
of all, and their triage (runs.watch.services.triage): operators and admins acknowledge, mark
expected with a note, or reopen; viewers see."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from runs.common.params import BadParameter, parse_choice
from runs.models import NOTE_MAX, ChangePointState, StoredChangePoint
from runs.views.refusals import refused
from runs.watch.regressions.selectors import FILTERS, regressions
from runs.watch.services.triage import TRIAGE_PERMISSION, TriageRefused, change_point_triage


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def regressions_page(request: HttpRequest) -> HttpResponse:
    try:
        state = parse_choice(request.GET.get("state", "open") or "open", "state", FILTERS)
    except BadParameter as exc:
        return refused(request, str(exc))
    context = {
        "rows": regressions(state),
        "state": state,
        "filters": FILTERS,
        "may_triage": request.user.has_perm(TRIAGE_PERMISSION),
        "note_max": NOTE_MAX,
        "states": ChangePointState,
    }
    return render(request, "runs/regressions.html", context)


@require_POST
@permission_required(TRIAGE_PERMISSION, raise_exception=True)
def change_point_triage_view(request: HttpRequest, point_id: int) -> HttpResponse:
    point = get_object_or_404(StoredChangePoint, pk=point_id)
    try:
        change_point_triage(
            point=point, state=request.POST.get("state", ""), note=request.POST.get("note", ""),
            actor=request.user, request=request,
        )  # fmt: skip
    except TriageRefused as exc:
        return refused(request, f"change point {point.identity} not changed: {exc}")
    back = request.POST.get("state_filter", "open")
    return redirect(reverse("regressions") + (f"?state={back}" if back in FILTERS else "") + f"#cp-{point.pk}")
