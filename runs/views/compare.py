"""The comparison page of any set of runs, its data (what the charts draw), its printable report
and its exports. Shared pages (runs.views.shares) render the same page through render_comparison
with the share's own URLs and without controls."""

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from benchlab.version import benchlab_version
from runs.baselines.selectors import baselines_for_devices
from runs.common.params import BadParameter, parse_choice
from runs.compare.differences import environment_common
from runs.compare.query import GROUP_NAMES, WORDS, ComparisonQuery, group_label, group_value
from runs.compare.results_table import results_table
from runs.compare.selectors.comparison import ComparisonResult, compare_runs, comparison_data, shown_runs
from runs.compare.selectors.export import (
    SERIES_COLUMNS,
    SUMMARY_COLUMNS,
    as_csv,
    series_rows,
    summary_rows,
    table_export,
)
from runs.method.selectors import compared_method
from runs.views.refusals import refused

EXPORTS = ("summary", "series", "table")  # table: the seeds' table (runs.compare.results_table)
FORMATS = ("csv", "json")


@dataclass(frozen=True)
class ComparisonUrls:
    """Where a comparison's data, exports and report live: under /compare/ with its query, or
    under a share link's own path (whose query is fixed by the share)."""

    base: str
    query: str

    @classmethod
    def of(cls, query: ComparisonQuery) -> "ComparisonUrls":
        return cls(base=reverse("compare"), query=urlencode(query.as_params()))

    def _with(self, path: str, **extra: str) -> str:
        query = "&".join(part for part in (urlencode(extra), self.query) if part)
        return f"{self.base}{path}" + (f"?{query}" if query else "")

    @property
    def page(self) -> str:
        return self._with("")

    @property
    def data(self) -> str:
        return self._with("data.json")

    @property
    def report(self) -> str:
        return self._with("print/")

    def export(self, what: str, fmt: str) -> str:
        return self._with(f"export.{fmt}", what=what)


def _grouping_choices(result: ComparisonResult) -> list[dict[str, Any]]:
    """The fields a user may group by: those whose values differ among the runs (the others
    cannot split them), each checked if the grouping uses it."""
    fields = []
    for word, name in GROUP_NAMES.items():
        values = {group_value(run, name) for run in result.runs}
        if len(values) > 1:
            fields.append({"word": word, "label": group_label(name), "checked": name in result.query.group_by})
    return fields


def comparison_context(result: ComparisonResult, urls: ComparisonUrls, *, shared: bool) -> dict[str, Any]:
    return {
        "result": result,
        "urls": urls,
        "exports": [(what, fmt, urls.export(what, fmt)) for what in EXPORTS for fmt in FORMATS],
        "shared": shared,
        "grouping": _grouping_choices(result),
        "grouped_by_configuration": not result.query.group_by,
        "facet_word": WORDS[result.query.facet] if result.query.facet else "",
        "environment": environment_common(result.runs),
        "results_table": results_table(result),
        "results_csv": urls.export("table", "csv"),
        "device_baselines": baselines_for_devices(sorted({run.device_id for run in result.runs})),
        "shown": {run.pk for run in shown_runs(result)},
        "method": compared_method(result),
        "generated_at": timezone.now(),
        "version": benchlab_version(),
    }


def render_comparison(
    request: HttpRequest,
    query: ComparisonQuery,
    urls: ComparisonUrls,
    *,
    shared: bool,
    report: bool = False,
    title: str = "",
) -> HttpResponse:
    """The comparison page (or its printable report); `title` replaces the generated heading
    (a share link's own title)."""
    try:
        result = compare_runs(query)
        if title:
            result = replace(result, title=title)
        context = comparison_context(result, urls, shared=shared)
    except BadParameter as exc:
        return refused(request, str(exc))
    return render(request, "runs/compare_report.html" if report else "runs/compare.html", context)


def comparison_data_response(request: HttpRequest, query: ComparisonQuery) -> HttpResponse:
    try:
        return JsonResponse(comparison_data(compare_runs(query)))
    except BadParameter as exc:
        return JsonResponse({"error": str(exc)}, status=400)


def comparison_export_response(
    request: HttpRequest, query: ComparisonQuery, fmt: str
) -> HttpResponse | StreamingHttpResponse:
    try:
        what = parse_choice(request.GET.get("what", "summary"), "what", EXPORTS)
        result = compare_runs(query)
    except BadParameter as exc:
        return refused(request, str(exc))
    name = f"benchlab-comparison-{what}.{fmt}"
    response: HttpResponse | StreamingHttpResponse
    if what == "summary":
        rows = summary_rows(result)
        if fmt == "json":
            method = [asdict(check) for check in compared_method(result)]
            response = JsonResponse({"query": query.as_params(), "rows": rows, "method": method})
        else:
            response = HttpResponse("".join(as_csv(rows, SUMMARY_COLUMNS)), content_type="text/csv; charset=utf-8")
    elif what == "table":
        response = _table_response(result, fmt)
    elif fmt == "json":
        response = JsonResponse({"query": query.as_params(), "rows": list(series_rows(result))})
    else:
        response = StreamingHttpResponse(as_csv(series_rows(result), SERIES_COLUMNS), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _table_response(result: ComparisonResult, fmt: str) -> HttpResponse:
    """The seeds' table: its first column is named by the grouping ("page size")."""
    columns, rows = table_export(result)
    if fmt == "json":
        return JsonResponse({"query": result.query.as_params(), "heading": columns[0], "rows": rows})
    return HttpResponse("".join(as_csv(rows, columns)), content_type="text/csv; charset=utf-8")


def query_params(request: HttpRequest) -> dict[str, str]:
    """The query string with repeated keys joined (the form's group checkboxes send one each),
    less what the export reads itself (`what`); anything else unknown the query refuses."""
    return {key: ",".join(request.GET.getlist(key)) for key in request.GET if key != "what"}


QueryView = Callable[..., HttpResponse | StreamingHttpResponse]


def with_query(view: QueryView) -> QueryView:
    """Parses the comparison in the query string for `view(request, query, ...)`; a bad one is
    refused with its reason (in JSON for the data endpoint)."""

    @functools.wraps(view)
    def parsed(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse | StreamingHttpResponse:
        try:
            query = ComparisonQuery.from_params(query_params(request))
        except BadParameter as exc:
            if view.__name__ == "compare_data":
                return JsonResponse({"error": str(exc)}, status=400)
            return refused(request, str(exc))
        return view(request, query, *args, **kwargs)

    return parsed


@require_safe
@permission_required("runs.view_host", raise_exception=True)
@with_query
def compare_page(request: HttpRequest, query: ComparisonQuery) -> HttpResponse:
    return render_comparison(request, query, ComparisonUrls.of(query), shared=False)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
@with_query
def compare_report(request: HttpRequest, query: ComparisonQuery) -> HttpResponse:
    return render_comparison(request, query, ComparisonUrls.of(query), shared=False, report=True)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
@with_query
def compare_data(request: HttpRequest, query: ComparisonQuery) -> HttpResponse:
    return comparison_data_response(request, query)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
@with_query
def compare_export(request: HttpRequest, query: ComparisonQuery, fmt: str) -> HttpResponse | StreamingHttpResponse:
    return comparison_export_response(request, query, fmt)
