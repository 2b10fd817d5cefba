"""The comparison API: the numbers of the comparison page for any runs (`?runs=1,2,3`) or a
campaign (`?campaign=4`), with the page's grouping options, and its summary table and
per-second series as JSON or CSV (`?file=csv`)."""

from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.filtering import CheckedListParameters
from runs.api.permissions import RolePermission
from runs.api.shapes.common import BAD_INPUT
from runs.api.shapes.comparisons import (
    FILE_PARAMETER,
    QUERY_PARAMETERS,
    ComparisonSerializer,
    SeriesTableSerializer,
    SummaryTableSerializer,
)
from runs.common.params import BadParameter, parse_choice
from runs.compare.query import FILTERS, PARAMETERS, ComparisonQuery
from runs.compare.selectors.comparison import ComparisonResult, compare_runs, comparison_data
from runs.compare.selectors.export import SERIES_COLUMNS, SUMMARY_COLUMNS, as_csv, series_rows, summary_rows


def comparison_of(params: dict[str, str]) -> ComparisonResult:
    """The comparison a query string asks for; a bad one is a 400 naming what is wrong."""
    try:
        return compare_runs(ComparisonQuery.from_params(params))
    except BadParameter as exc:
        raise ValidationError({"detail": str(exc)}) from None


def api_query_params(request: Request) -> dict[str, str]:
    """The query string with repeated keys joined (group=device&group=filesystem), less the
    file format the tables read themselves; anything else unknown the query refuses."""
    return {key: ",".join(request.query_params.getlist(key)) for key in request.query_params if key != "file"}


def export_file(request: Request) -> str:
    """?file=json (the default) or csv."""
    try:
        return parse_choice(request.query_params.get("file", "json"), "file", ("json", "csv"))
    except BadParameter as exc:
        raise ValidationError({"file": [str(exc)]}) from None


def _with_csv(json_shape: type) -> dict[Any, Any]:
    """The answer as JSON, or with ?file=csv the same rows as CSV (a header line, then a line a row)."""
    csv = OpenApiResponse(OpenApiTypes.STR, description="?file=csv: the rows as CSV, with a header line.")
    return {(200, "application/json"): json_shape, (200, "text/csv"): csv, 400: BAD_INPUT}


class ComparisonViewSet(CheckedListParameters, viewsets.ViewSet):
    """GET /api/comparisons/?runs=… (or ?campaign=…, or the run list's filters) the comparison;
    …/summary/ and …/series/ its tables."""

    permission_classes = [RolePermission]
    checked_actions = ("list", "summary", "series")
    list_parameters = (*PARAMETERS, *FILTERS)

    def allowed_parameters(self) -> tuple[str, ...]:
        return (*super().allowed_parameters(), *(("file",) if self.action != "list" else ()))  # the tables' format

    @extend_schema(parameters=QUERY_PARAMETERS, responses={200: ComparisonSerializer, 400: BAD_INPUT})
    def list(self, request: Request) -> Response:
        return Response(comparison_data(comparison_of(api_query_params(request))))

    @extend_schema(parameters=[*QUERY_PARAMETERS, FILE_PARAMETER], responses=_with_csv(SummaryTableSerializer))
    @action(detail=False, methods=["get"])
    def summary(self, request: Request) -> Response | HttpResponse:
        file, result = export_file(request), comparison_of(api_query_params(request))
        rows = summary_rows(result)
        if file == "csv":
            return HttpResponse("".join(as_csv(rows, SUMMARY_COLUMNS)), content_type="text/csv; charset=utf-8")
        return Response({"query": result.query.as_params(), "rows": rows})

    @extend_schema(parameters=[*QUERY_PARAMETERS, FILE_PARAMETER], responses=_with_csv(SeriesTableSerializer))
    @action(detail=False, methods=["get"])
    def series(self, request: Request) -> Any:
        file, result = export_file(request), comparison_of(api_query_params(request))
        if file == "csv":
            return StreamingHttpResponse(as_csv(series_rows(result), SERIES_COLUMNS), content_type="text/csv")
        return Response({"query": result.query.as_params(), "rows": list(series_rows(result))})
