"""The fio baseline API: list, detail (with fio's figures), create (queue), cancel.

A baseline is asked for with the fields of the page's form and validated by that form (and so
by the lab layer's rules and the device's refusal): 400 with a message per field on bad input,
and nothing is created; 201 when it was queued.
"""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.jobs import JobViewSet
from runs.api.json_fields import JSONObjectField, JSONTextListField
from runs.api.parameters import query_parameter
from runs.api.shapes.common import BAD_INPUT
from runs.baselines.services.baselines import baseline_queue
from runs.common.params import parse_choice, parse_id
from runs.forms.baselines import BaselineForm
from runs.lab.fio.plan import IOENGINES, JOB_NAMES, FioSettings, MiB
from runs.models import BaselineState, DeviceBaseline


class BaselineSerializer(serializers.ModelSerializer):
    figures = serializers.DictField(read_only=True)
    jobs = JSONTextListField(read_only=True, help_text="The fio jobs chosen, in standard order.")

    class Meta:
        model = DeviceBaseline
        fields = ["id", "device", "host", "campaign", "size_bytes", "runtime_s", "ramp_s", "jobs", "ioengine",
                  "state", "step", "progress", "queued_by", "created_at", "started_at", "finished_at",
                  "cancel_requested", "target_mode", "target_description", "error", "fio_version",
                  "figures"]  # fmt: skip
        read_only_fields = fields


class BaselineDetailSerializer(BaselineSerializer):
    results = JSONObjectField(read_only=True, help_text="fio's figures per job")

    class Meta(BaselineSerializer.Meta):
        fields = [*BaselineSerializer.Meta.fields, "results", "command", "failed_command", "failed_exit_status",
                  "failed_output", "log"]  # fmt: skip
        read_only_fields = fields


class BaselineCreateSerializer(serializers.Serializer):
    """The page's form, field for field: the API and the page refuse the same things."""

    device = serializers.IntegerField()
    size_mib = serializers.IntegerField(required=False, default=FioSettings.size_bytes // MiB)
    runtime_s = serializers.IntegerField(required=False, default=FioSettings.runtime_s)
    ramp_s = serializers.IntegerField(required=False, default=FioSettings.ramp_s)
    jobs = serializers.ListField(child=serializers.CharField(), required=False, default=lambda: list(JOB_NAMES))
    ioengine = serializers.ChoiceField(choices=IOENGINES, required=False, default=FioSettings.ioengine)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = QueryDict(mutable=True)
        for name, value in attrs.items():
            if name != "jobs":
                data[name] = str(value)
        data.setlist("jobs", attrs["jobs"])
        form = BaselineForm(data)
        if not form.is_valid():
            raise ValidationError({field: [str(e) for e in errors] for field, errors in form.errors.items()})
        return {"form": form}


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("device", int, description="Only this device's baselines."),
            OpenApiParameter("state", str, enum=BaselineState.values, description="Only baselines in this state."),
        ]
    ),
    create=extend_schema(responses={201: OpenApiResponse(BaselineSerializer, description="Queued."), 400: BAD_INPUT}),
)
class BaselineViewSet(JobViewSet):
    cancelled_serializer = BaselineSerializer
    detail_serializer = BaselineDetailSerializer
    create_serializer = BaselineCreateSerializer
    list_parameters = ("device", "state")

    def get_queryset(self) -> QuerySet[DeviceBaseline]:
        baselines = DeviceBaseline.objects.select_related("host", "device", "queued_by").order_by("-created_at", "-id")
        if (device := query_parameter(self.request, "device", parse_id)) is not None:
            baselines = baselines.filter(device_id=device)
        if (state := query_parameter(self.request, "state", _state_choice)) is not None:
            baselines = baselines.filter(state=state)
        return baselines.defer("fio_json", "log", "failed_output") if self.action == "list" else baselines

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        asked = BaselineCreateSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        form: BaselineForm = asked.validated_data["form"]
        try:
            baseline = baseline_queue(
                device=form.cleaned_data["device"], settings=form.settings(), by=request.user, request=request
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from None
        return Response(BaselineSerializer(baseline).data, status=status.HTTP_201_CREATED)


def _state_choice(raw: str, name: str) -> str:
    return parse_choice(raw, name, BaselineState.values)
