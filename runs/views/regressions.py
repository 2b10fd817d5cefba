"""The regressions page: stored change points (runs.watch.regressions.selectors), the open ones the
latest detection still found first of all, fifty a page as the run list, and their triage
(runs.watch.services.triage): operators and admins acknowledge, mark
expected with a note, or reopen; viewers see."""

from django.contrib.auth.decorators import permission_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from runs.common.paging import asked_page, page_or_last
from runs.common.params import BadParameter, parse_choice
from runs.models import NOTE_MAX, ChangePointState, StoredChangePoint
from runs.views.refusals import refused
from runs.watch.regressions.selectors import FILTERS, FOUND_FILTERS, PER_PAGE, change_points, regressions
from runs.watch.services.triage import TRIAGE_PERMISSION, TriageRefused, change_point_triage


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def regressions_page(request: HttpRequest) -> HttpResponse:
    try:
        state = parse_choice(request.GET.get("state", "open") or "open", "state", FILTERS)
        found = parse_choice(request.GET.get("found", "yes") or "yes", "found", FOUND_FILTERS)
        number = asked_page(request.GET.get("page"))
    except BadParameter as exc:
        return refused(request, str(exc))
    page, past_the_end = page_or_last(Paginator(change_points(state, found), PER_PAGE), number, "change points")
    context = {
        "page": page,
        "past_the_end": past_the_end,
        "rows": regressions(page),
        "state": state,
        "found": found,
        "filters": FILTERS,
        "found_filters": {"yes": "still found", "no": "no longer found", "all": "either"},
        "may_triage": request.user.has_perm(TRIAGE_PERMISSION),
        "triage_permission": TRIAGE_PERMISSION,
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
    shown = request.POST.get("found_filter", "yes")
    query = [f"state={back}"] if back in FILTERS else []
    query += [f"found={shown}"] if shown in FOUND_FILTERS and shown != "yes" else []
    return redirect(reverse("regressions") + (f"?{'&'.join(query)}" if query else "") + f"#cp-{point.pk}")
