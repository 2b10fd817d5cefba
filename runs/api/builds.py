"""The PostgreSQL build API: list, detail, create (queue, or the same build found), cancel, remove.

A build is asked for with the fields of the page's form and validated by that form (and so by
the lab layer's rules and against the sources the host has, asked of it): 400 with a message per
field on bad input or a source the host lacks, 201 when a build was queued, 200 with the existing
build when the host has (or is making) the same one. What a host has is
GET /api/hosts/<id>/build-sources/ (runs.api.views).
"""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.jobs import JobViewSet
from runs.api.json_fields import JSONStepsField, JSONTextListField
from runs.api.parameters import query_parameter
from runs.api.shapes.common import BAD_INPUT, REFUSED, DetailSerializer
from runs.builds.services.builds import BuildRefused, build_refusal
from runs.builds.services.remove import BuildRemoveFailed, build_remove
from runs.common.params import parse_choice, parse_id
from runs.forms.builds import BuildForm, legacy_source_key, sources_of
from runs.lab.pgbuild.options import SourceKind
from runs.models import BuildState, Host, PgBuild

ASKED = ["host", "version", "source_kind", "package", "package_version", "tarball_path", "sha256",
         "block_size_kb", "wal_block_size_kb", "segment_size_gb", "configure_flags"]  # fmt: skip


class BuildSerializer(serializers.ModelSerializer):
    source = serializers.SerializerMethodField(help_text="its source's key, as GET /api/hosts/<id>/build-sources/ says")
    configure_flags = JSONTextListField(read_only=True, help_text="flags given to configure")

    class Meta:
        model = PgBuild
        fields = ["id", "source", *ASKED, "key", "prefix", "state", "step", "progress", "queued_by", "created_at",
                  "started_at", "finished_at", "removed_at", "cancel_requested", "reused", "failed_step",
                  "failed_command", "failed_exit_status", "failed_output", "error", "built_version",
                  "built_block_size", "built_wal_block_size", "built_segment_size", "pgbench_version",
                  "source_sha256", "pg_install"]  # fmt: skip
        read_only_fields = fields

    def get_source(self, build: PgBuild) -> str:
        return legacy_source_key(build.source_kind, build.package, build.package_version, build.tarball_path)


class BuildDetailSerializer(BuildSerializer):
    step_times = serializers.SerializerMethodField(
        help_text="each step entered: {step, started_at, ended_at} (ended_at null while it runs)"
    )
    steps = JSONStepsField(read_only=True, help_text="each step entered: [name, started, ended] ISO times")

    class Meta(BuildSerializer.Meta):
        fields = [*BuildSerializer.Meta.fields, "steps", "step_times", "log"]
        read_only_fields = fields

    def get_step_times(self, build: PgBuild) -> list[dict[str, Any]]:
        return [
            {"step": step, "started_at": started and started.isoformat(), "ended_at": ended and ended.isoformat()}
            for step, started, ended in build.step_times()
        ]


class BuildCreateSerializer(serializers.Serializer):
    """The page's form, field for field (the API and the page refuse the same things), plus the
    older way to name a source: source_kind with package and package_version, or with
    tarball_path (and sha256), accepted when the host has that source."""

    host = serializers.IntegerField()
    source = serializers.CharField(required=False, allow_blank=True, default="")
    version = serializers.CharField(required=False, allow_blank=True, default="")
    source_kind = serializers.CharField(required=False, allow_blank=True, default="")
    package = serializers.CharField(required=False, allow_blank=True, default="")
    package_version = serializers.CharField(required=False, allow_blank=True, default="")
    tarball_path = serializers.CharField(required=False, allow_blank=True, default="")
    sha256 = serializers.CharField(required=False, allow_blank=True, default="")
    block_size_kb = serializers.IntegerField(required=False, default=8)
    wal_block_size_kb = serializers.IntegerField(required=False, default=8)
    segment_size_gb = serializers.IntegerField(required=False, default=1)
    configure_flags = serializers.ListField(child=serializers.CharField(), required=False, default=list)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind = attrs["source_kind"]
        if not attrs["source"] and kind:
            if kind not in SourceKind.__members__.values():
                said = f"Choose the Debian source package or a source tarball, not {kind[:40]}."
                raise ValidationError({"source_kind": [said]})
            attrs["source"] = legacy_source_key(kind, attrs["package"], attrs["package_version"], attrs["tarball_path"])
        data = {name: attrs[name] for name in FORM_FIELDS}
        host = Host.objects.filter(enabled=True, pk=attrs["host"]).first()
        form = BuildForm(_form_data(data, attrs["configure_flags"]), **sources_of(host))
        if not form.is_valid():
            raise ValidationError({field: [str(e) for e in errors] for field, errors in form.errors.items()})
        return {"form": form}


FORM_FIELDS = ["host", "source", "version", "sha256", "block_size_kb", "wal_block_size_kb", "segment_size_gb"]


def _form_data(data: dict[str, Any], flags: list[str]) -> QueryDict:
    form_data = QueryDict(mutable=True)
    for name, value in data.items():
        form_data[name] = str(value)
    form_data.setlist("configure_flags", flags)
    return form_data


BUILD_CHOICE_FILTERS = {"state": BuildState.values}


class BuildRemovedSerializer(BuildSerializer):
    detail = serializers.CharField(help_text="what was removed")

    class Meta(BuildSerializer.Meta):
        fields = [*BuildSerializer.Meta.fields, "detail"]
        read_only_fields = fields


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("host", int, description="Only this host's builds."),
            OpenApiParameter("state", str, enum=BuildState.values, description="Only builds in this state."),
        ]
    ),
    create=extend_schema(
        responses={
            201: OpenApiResponse(BuildSerializer, description="Queued."),
            200: OpenApiResponse(BuildSerializer, description="The host has, or is making, the same build: that one."),
            400: BAD_INPUT,
        }
    ),
)
class BuildViewSet(JobViewSet):
    cancelled_serializer = BuildSerializer
    detail_serializer = BuildDetailSerializer
    create_serializer = BuildCreateSerializer
    required_permission = JobViewSet.required_permission | {"remove": "runs.cancel_run"}
    list_parameters = ("host", "state")

    def get_queryset(self) -> QuerySet[PgBuild]:
        builds = PgBuild.objects.select_related("host", "queued_by").order_by("-created_at", "-id")
        if (host := query_parameter(self.request, "host", parse_id)) is not None:
            builds = builds.filter(host_id=host)
        if (state := query_parameter(self.request, "state", _state_choice)) is not None:
            builds = builds.filter(state=state)
        if self.action == "list":
            builds = builds.defer("log", "failed_output", "steps")
        return builds

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a build from a source the host has (GET /api/hosts/<id>/build-sources/): 201 when one
        was queued, 200 with the existing build when the host has, or is making, the same one."""
        asked = BuildCreateSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        form: BuildForm = asked.validated_data["form"]
        try:
            build, queued = form.queue(request.user, request)
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from None
        answer = status.HTTP_201_CREATED if queued else status.HTTP_200_OK
        return Response(BuildSerializer(build).data, status=answer)

    @extend_schema(
        request=None,
        responses={
            200: BuildRemovedSerializer,
            400: OpenApiResponse(DetailSerializer, description="Refused as things stand (in use, a busy host)."),
            403: REFUSED,
            503: OpenApiResponse(DetailSerializer, description="The host could not remove it."),
        },
    )
    @action(detail=True, methods=["post"])
    def remove(self, request: Request, pk: str | None = None) -> Response:
        """Remove the build's prefix from its host and mark it removed; `detail` says what became of its
        install. 400 when it may not be removed now (its state, runs that use it, a busy host)."""
        build = self.get_object()
        if refusal := build_refusal(request.user, build, "remove"):
            raise PermissionDenied(refusal)
        try:
            said = build_remove(build=build, by=request.user, request=request)
        except BuildRefused as exc:  # refused as things stand (in use, a busy host), like the API's other refusals
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except BuildRemoveFailed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        build.refresh_from_db()
        return Response(BuildSerializer(build).data | {"detail": said})


def _state_choice(raw: str, name: str) -> str:
    return parse_choice(raw, name, BUILD_CHOICE_FILTERS["state"])
