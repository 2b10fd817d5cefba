"""The regression watch's pages: every recurring configuration (a series over time), and one
series with its metrics per round, change points and drift (runs.watch.selectors)."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.views.refusals import refused
from runs.watch.regressions.selectors import regressions, stored_of_series
from runs.watch.selectors import chart_data, series_detail
from runs.watch.series import key_checked
from runs.watch.summaries import series_list


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def series_page(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/series_list.html", {"series": series_list()})


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def series_detail_page(request: HttpRequest, key: str) -> HttpResponse:
    try:
        detail = series_detail(key_checked(key))
    except ValueError as exc:
        return refused(request, str(exc))
    if detail is None:
        return refused(request, f"no done run belongs to series {key}: it has no rounds", status=404)
    stored = stored_of_series(detail.key)
    triaged = [(change, stored.get(change.identity)) for change in detail.changes]
    # Stored earlier, and not found by the detection shown: kept with their triage, said so.
    found = {change.identity for change in detail.changes}
    gone = regressions(sorted((p for p in stored.values() if p.identity not in found), key=lambda p: p.round_after))
    context = {"detail": detail, "chart": chart_data(detail), "triaged": triaged, "gone": gone}
    return render(request, "runs/series_detail.html", context)
