"""The regressions page: stored change points (runs.watch.regressions.selectors), the open ones the
latest detection still found first of all, fifty a page as the run list, and their triage
(runs.watch.services.triage): operators and admins acknowledge, mark
expected with a note, or reopen; viewers see."""

from django.contrib.auth.decorators import permission_required
from django.core.paginator import EmptyPage, Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from runs.common.params import BadParameter, parse_choice, parse_whole_number
from runs.models import NOTE_MAX, ChangePointState, StoredChangePoint
from runs.views.refusals import refused
from runs.watch.regressions.selectors import FILTERS, FOUND_FILTERS, PER_PAGE, change_points, regressions
from runs.watch.services.triage import TRIAGE_PERMISSION, TriageRefused, change_point_triage

MAX_PAGE = 10**6


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def regressions_page(request: HttpRequest) -> HttpResponse:
    try:
        state = parse_choice(request.GET.get("state", "open") or "open", "state", FILTERS)
        found = parse_choice(request.GET.get("found", "yes") or "yes", "found", FOUND_FILTERS)
        number = parse_whole_number(raw, "page", 1, MAX_PAGE) if (raw := request.GET.get("page")) else 1
        page = _page(change_points(state, found), number)
    except BadParameter as exc:
        return refused(request, str(exc))
    context = {
        "page": page,
        "rows": regressions(page),
        "state": state,
        "found": found,
        "filters": FILTERS,
        "found_filters": {"yes": "still found", "no": "no longer found", "all": "either"},
        "may_triage": request.user.has_perm(TRIAGE_PERMISSION),
        "note_max": NOTE_MAX,
        "states": ChangePointState,
    }
    return render(request, "runs/regressions.html", context)


def _page(points: QuerySet[StoredChangePoint], number: int) -> "Page[StoredChangePoint]":
    """The page asked for, as the run list pages (runs.forms.run_filters.filtered_run_page): one past
    the end is refused saying which pages there are."""
    paginator = Paginator(points, PER_PAGE)
    try:
        return paginator.page(number)
    except EmptyPage:
        if paginator.count == 0:
            said = "no change point matches these filters (only page 1, empty)"
        else:
            said = f"these change points fill pages 1 to {paginator.num_pages}"
        raise BadParameter(f"there is no page {number}: {said}") from None


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
