"""The campaign API: create (or preview) from a base run specification and variables, list,
detail with per-configuration statistics (the numbers the page shows), its results table (JSON or
the page's CSV), cancel, retry."""

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.comparisons import api_query_params, comparison_of, export_file
from runs.api.filtering import CheckedListParameters
from runs.api.jobs import QueueThrottled
from runs.api.notes import NotesAction
from runs.api.parameters import query_parameter
from runs.api.permissions import RolePermission
from runs.api.serializers import RunSerializer
from runs.api.shapes.campaigns import (
    CampaignCancelledSerializer,
    CampaignCancelSerializer,
    CampaignDetailSerializer,
    CampaignPreviewSerializer,
    CampaignRetriedSerializer,
    CampaignRetrySerializer,
    CampaignSerializer,
)
from runs.api.shapes.common import BAD_INPUT, REFUSED
from runs.api.shapes.comparisons import QUERY_PARAMETERS, ComparisonSerializer
from runs.bench.specs import RunSpec
from runs.campaigns.matrix import Cell, MatrixError, variables_from_json
from runs.campaigns.selectors.canary import campaign_canaries, canaries_json
from runs.campaigns.selectors.overview import campaign_overview
from runs.campaigns.selectors.results import (
    Progress,
    campaign_list,
    campaign_progress,
    campaign_runs,
    plan_wall_estimate,
)
from runs.campaigns.services.campaigns import (
    CampaignForbidden,
    CampaignPlan,
    CampaignRefused,
    campaign_cancel,
    campaign_create,
    campaign_refusal,
    campaign_retry_failed,
)
from runs.common.params import IdConverter, parse_whole_number
from runs.compare.selectors.comparison import comparison_data
from runs.compare.selectors.export import as_csv, table_export
from runs.forms.campaigns import adaptive_problems
from runs.jobs.cancel import JobRefused
from runs.models import MAX_REPETITIONS, Campaign, CampaignConfiguration, RunOrder


@extend_schema_field(RunSerializer)
class RunSpecField(serializers.DictField):
    """A run's specification as POST /api/runs/ takes it (and validates it: validate_base)."""


class CampaignCreateSerializer(serializers.Serializer):
    """The campaign as the form takes it: the base is a run as POST /api/runs/ takes one."""

    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    base = RunSpecField(help_text="The run every configuration starts from, as POST /api/runs/ takes one.")
    variables = serializers.ListField(child=serializers.DictField(), allow_empty=True)
    repetitions = serializers.IntegerField(min_value=1, max_value=MAX_REPETITIONS)
    order = serializers.ChoiceField(choices=RunOrder.choices, default=RunOrder.INTERLEAVED)
    seed = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=2**62)
    fresh_database = serializers.BooleanField(default=False)
    fio_baseline = serializers.BooleanField(
        default=False, help_text="Measure each device of the campaign with fio (a baseline) before its runs."
    )
    fio_canary = serializers.BooleanField(
        default=False,
        help_text="A short fio canary on each device before and after the campaign; a device that changed "
        "between the two is flagged (the detail's canary and method).",
    )
    target_ci_pct = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0.1, max_value=50)
    max_repetitions = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=2, max_value=MAX_REPETITIONS
    )
    preview = serializers.BooleanField(default=False, help_text="Only expand and estimate; queue nothing.")

    def validate_base(self, value: dict[str, Any]) -> RunSpec:
        base = RunSerializer(data=value)
        if not base.is_valid():
            raise ValidationError(base.errors)
        return RunSpec.from_form_data(base.validated_data)

    def validate_variables(self, value: list[dict[str, Any]]) -> Any:
        try:
            return variables_from_json(value)
        except MatrixError as exc:
            raise ValidationError(str(exc)) from None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("seed") is not None and attrs["order"] != RunOrder.SHUFFLED:
            raise ValidationError({"seed": "A seed only means something with the shuffled order."})
        problems = adaptive_problems(attrs["repetitions"], attrs.get("target_ci_pct"), attrs.get("max_repetitions"))
        if problems:
            raise ValidationError({field: [message] for field, message in problems})
        return attrs

    def plan(self) -> CampaignPlan:
        data = self.validated_data
        return CampaignPlan(
            name=data["name"],
            description=data["description"],
            base=data["base"],
            variables=data["variables"],
            repetitions=data["repetitions"],
            order=data["order"],
            seed=data["seed"],
            fresh_database=data["fresh_database"],
            fio_baseline=data["fio_baseline"],
            fio_canary=data["fio_canary"],
            target_ci_pct=data["target_ci_pct"],
            max_repetitions=data["max_repetitions"],
        )


def cell_json(cell: Cell) -> dict[str, Any]:
    return {
        "label": cell.label,
        "values": dict(cell.values),
        "valid": cell.valid,
        "reasons": cell.reasons(),
        "spec": cell.spec.as_json(),
    }


def campaign_json(campaign: Campaign, baseline: int | None = None, with_details: bool = True) -> dict[str, Any]:
    if not with_details:  # the list's: no matrix, no statistics
        return _campaign_heading(campaign, campaign_progress(campaign, campaign_runs(campaign)))
    baseline = campaign.baseline_index if baseline is None else baseline
    overview = campaign_overview(campaign, baseline)
    data = _campaign_heading(campaign, overview.progress)
    data["base_spec"] = campaign.base_spec
    data["variables"] = campaign.variables
    data["rejected"] = campaign.rejected
    data["baseline"] = baseline
    adaptive, confounds = overview.adaptive, overview.confounds
    data["configurations"] = [
        {
            "adaptive": (
                {"repeating": adaptive[row.configuration].repeating, "reason": adaptive[row.configuration].reason}
                if row.configuration in adaptive
                else None
            ),
            "index": row.configuration.index,
            "label": row.configuration.label,
            "values": row.configuration.values,
            "spec": row.configuration.spec,
            "runs": [
                {"id": run.pk, "repetition": rep, "state": run.state}
                for rep, attempts in sorted(row.attempts.items())
                for run in attempts
            ],
        }
        for row in overview.matrix
    ]
    data["warnings"] = confounds.warnings  # what the verdicts mix in besides the configuration
    data["statistics"] = {
        table.metric.key: {
            "label": table.metric.label,
            "unit": table.metric.unit,
            "rows": [
                {
                    "configuration": row.configuration.index,
                    "summary": row.summary.as_json(),
                    "comparison": row.comparison.as_json() if row.comparison else None,
                    "confounded": confounds.marker(row.configuration.index)[1] or None,
                    "failed": row.failed,
                    "failures": row.failures,
                }
                for row in table.rows
            ],
        }
        for table in overview.tables
    }
    data["canary"] = canaries_json(campaign_canaries(campaign)) if campaign.fio_canary else None
    return data


def _campaign_heading(campaign: Campaign, progress: Progress) -> dict[str, Any]:
    return {
        "id": campaign.pk,
        "name": campaign.name,
        "description": campaign.description,
        "note": campaign.note,
        "tags": list(campaign.tags),
        "preset": campaign.preset,
        "created_by": campaign.created_by.get_username() if campaign.created_by else None,
        "created_at": campaign.created_at.isoformat(),
        "repetitions": campaign.repetitions,
        "order": campaign.order,
        "seed": campaign.seed,
        "fresh_database": campaign.fresh_database,
        "fio_baseline": campaign.fio_baseline,
        "fio_canary": campaign.fio_canary,
        "target_ci_pct": campaign.target_ci_pct,
        "max_repetitions": campaign.max_repetitions,
        "progress": {
            "total": progress.total,
            "finished": progress.finished,
            "by_state": progress.by_state,
            "eta_s": progress.eta_s,
        },
    }


_BASELINE = OpenApiParameter("baseline", int, description="The configuration compared with (default: the campaign's).")


@extend_schema_view(
    list=extend_schema(responses=CampaignSerializer(many=True)),
    retrieve=extend_schema(parameters=[_BASELINE], responses=CampaignDetailSerializer),
    create=extend_schema(
        responses={
            201: OpenApiResponse(CampaignDetailSerializer, description="Queued."),
            200: OpenApiResponse(CampaignPreviewSerializer, description='With "preview": true; nothing is queued.'),
            400: BAD_INPUT,
        }
    ),
    comparison=extend_schema(
        parameters=[p for p in QUERY_PARAMETERS if p.name not in ("runs", "campaign")],
        responses={200: ComparisonSerializer, 400: BAD_INPUT},
    ),
    cancel=extend_schema(
        request=CampaignCancelSerializer, responses={200: CampaignCancelledSerializer, 400: BAD_INPUT, 403: REFUSED}
    ),
    retry=extend_schema(
        request=CampaignRetrySerializer, responses={200: CampaignRetriedSerializer, 400: BAD_INPUT, 403: REFUSED}
    ),
)
class CampaignViewSet(
    NotesAction, CheckedListParameters, QueueThrottled, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    lookup_value_regex = IdConverter.regex
    queryset = Campaign.objects.select_related("created_by").order_by("-created_at")
    serializer_class = CampaignCreateSerializer
    permission_classes = [RolePermission]
    required_permission = {
        "create": "runs.queue_run", "cancel": "runs.cancel_run", "retry": "runs.queue_run",
        **NotesAction.notes_permission,
    }  # fmt: skip

    queue_actions = ("create", "retry")
    checked_actions = ("list", "results_table")  # the comparison action's query refuses what it does not read

    def allowed_parameters(self) -> tuple[str, ...]:
        return ("file",) if self.action == "results_table" else super().allowed_parameters()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rows = campaign_list()
        page = self.paginate_queryset(rows)
        items = [campaign_json(row["campaign"], with_details=False) for row in (page if page is not None else rows)]
        return self.get_paginated_response(items) if page is not None else Response(items)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        campaign = self.get_object()
        count = campaign.configurations.count()
        parse = lambda raw, name: parse_whole_number(raw, name, 0, max(count - 1, 0))  # noqa: E731
        return Response(campaign_json(campaign, query_parameter(request, "baseline", parse)))

    @action(detail=True, methods=["get"])
    def comparison(self, request: Request, pk: str | None = None) -> Response:
        """The campaign's runs on the comparison page's terms (regroup with ?group=, ?baseline=)."""
        campaign = self.get_object()
        params = api_query_params(request) | {"campaign": str(campaign.pk)}
        return Response(comparison_data(comparison_of(params)))

    @action(detail=True, methods=["get"], url_path="results-table")
    def results_table(self, request: Request, pk: str | None = None) -> Response | HttpResponse:
        """The campaign page's results table (the seeds' tps table), as JSON or as the CSV its
        page's link gives (?file=csv): the same rows, by the same code (runs.compare.selectors.export)."""
        file, campaign = export_file(request), self.get_object()
        result = comparison_of({"campaign": str(campaign.pk)})
        columns, rows = table_export(result)
        if file == "csv":
            return HttpResponse("".join(as_csv(rows, columns)), content_type="text/csv; charset=utf-8")
        return Response({"query": result.query.as_params(), "heading": columns[0], "rows": rows})

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a campaign: every valid combination of the variables' values, each repeated. With
        "preview": true, only the expansion and its estimate (200), and nothing is queued."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        plan = serializer.plan()
        cells = plan.cells()
        if serializer.validated_data["preview"]:
            valid = [cell.spec for cell in cells if cell.valid]
            estimate = plan_wall_estimate(valid, plan.repetitions, plan.fresh_database) if valid else None
            return Response({
                "configurations": [cell_json(cell) for cell in cells],
                "runs": len(valid) * plan.repetitions,
                "estimated_wall_s": estimate.seconds if estimate else None,
                "refusal": campaign_refusal(plan, cells),
            })  # fmt: skip
        try:
            campaign = campaign_create(plan=plan, by=request.user, request=request)
        except CampaignRefused as exc:
            raise ValidationError({"variables": [str(exc)], "rejected": [cell_json(c) for c in cells]}) from None
        return Response(campaign_json(campaign), status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel the campaign's jobs that have not ended, or one configuration's; how many, and the campaign."""
        campaign = self.get_object()
        configuration = None
        if (index := request.data.get("configuration")) is not None:
            valid_index = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < 2**31
            if valid_index:
                configuration = CampaignConfiguration.objects.filter(campaign=campaign, index=index).first()
            if configuration is None:
                raise ValidationError({"configuration": f"no configuration {index!r:.20} in this campaign (an index)"})
        try:
            cancelled = campaign_cancel(
                campaign=campaign, by=request.user, configuration=configuration, request=request
            )
        except JobRefused as exc:
            raise PermissionDenied(str(exc)) from None
        except CampaignRefused as exc:  # nothing left to cancel
            raise ValidationError(str(exc)) from None
        return Response({"cancelled": cancelled} | campaign_json(campaign, with_details=False))

    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str | None = None) -> Response:
        """Queue again each repetition whose latest attempt failed, with that attempt's seed (new_seeds:
        a new one); how many, and the campaign. Its owner and admins may."""
        campaign = self.get_object()
        new_seeds = request.data.get("new_seeds", False)
        if not isinstance(new_seeds, bool):
            raise ValidationError({"new_seeds": f"must be true or false, not {new_seeds!r:.40}"})
        try:
            queued = campaign_retry_failed(campaign=campaign, by=request.user, request=request, new_seeds=new_seeds)
        except CampaignForbidden as exc:
            raise PermissionDenied(str(exc)) from None
        except CampaignRefused as exc:
            raise ValidationError(str(exc)) from None
        return Response({"queued": queued} | campaign_json(campaign, with_details=False))
