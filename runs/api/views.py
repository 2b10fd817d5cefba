"""The JSON API for automation: inventory (read), runs (queue, list, detail, cancel), samples."""

from functools import partial

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.jobs import ID_IN_URL, JobViewSet
from runs.api.parameters import query_parameter
from runs.api.permissions import RolePermission
from runs.api.serializers import (
    DeviceSerializer,
    HostSerializer,
    PgInstallSerializer,
    RunDetailSerializer,
    RunSampleSerializer,
    RunSerializer,
)
from runs.api.shapes.common import REFUSED
from runs.api.shapes.inventory import HostSourcesSerializer, HostSourcesUnknownSerializer
from runs.bench.services.runs import run_enqueue
from runs.bench.specs import RunSpec
from runs.builds.services.sources import SourcesUnknown, host_sources_for_page
from runs.common.params import parse_choice, parse_id
from runs.method.selectors import spec_method
from runs.method.services.acceptance import accepted_when_queued
from runs.models import Device, Driver, Filesystem, Host, PgInstall, Run, RunState, Workload


class HostViewSet(viewsets.ReadOnlyModelViewSet):
    lookup_value_regex = ID_IN_URL
    queryset = Host.objects.order_by("name")
    serializer_class = HostSerializer
    permission_classes = [RolePermission]
    # Listing a host's sources asks the host over SSH: for those who may queue builds.
    required_permission = {"build_sources": "runs.queue_run"}

    @extend_schema(responses={200: HostSourcesSerializer, 403: REFUSED, 503: HostSourcesUnknownSerializer})
    @action(detail=True, methods=["get"], url_path="build-sources")
    def build_sources(self, request: Request, pk: str | None = None) -> Response:
        """The PostgreSQL sources the host has now (asked of it: builds.services.sources), what
        POST /api/builds/ takes as `source`; 503 saying why when it could not be asked."""
        host = self.get_object()
        try:
            sources = host_sources_for_page(host)
        except SourcesUnknown as exc:
            return Response({"host": host.pk, "detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        listed = [
            {"key": s.key, "kind": str(s.kind), "version": s.version, "sha256": s.sha256, "file_name": s.file_name,
             "package": s.package, "package_version": s.package_version, "label": s.label}
            for s in sources
        ]  # fmt: skip
        return Response({"host": host.pk, "sources": listed})


@extend_schema_view(list=extend_schema(parameters=[OpenApiParameter("host", int, description="Only this host's.")]))
class DeviceViewSet(viewsets.ReadOnlyModelViewSet):
    lookup_value_regex = ID_IN_URL
    queryset = Device.objects.order_by("host__name", "name")
    serializer_class = DeviceSerializer
    permission_classes = [RolePermission]

    def get_queryset(self) -> QuerySet[Device]:
        host = query_parameter(self.request, "host", parse_id)
        return self.queryset.filter(host_id=host) if host is not None else self.queryset


class PgInstallViewSet(viewsets.ReadOnlyModelViewSet):
    lookup_value_regex = ID_IN_URL
    queryset = PgInstall.objects.order_by("host__name", "version")
    serializer_class = PgInstallSerializer
    permission_classes = [RolePermission]


RUN_ID_FILTERS = {"host": "server_host_id", "device": "device_id", "pg_install": "pg_install_id"}
RUN_CHOICE_FILTERS = {
    "state": RunState.values,
    "filesystem": Filesystem.values,
    "driver": Driver.values,
    "workload": Workload.values,
}


class RunViewSet(JobViewSet):
    serializer_class = RunSerializer
    cancelled_serializer = RunSerializer
    detail_serializer = RunDetailSerializer

    def get_queryset(self) -> QuerySet[Run]:
        runs = Run.objects.select_related("server_host", "device", "pg_install").order_by("-created_at")
        runs = runs.prefetch_related("run_clients__host")  # client_hosts and their names, in one query
        for parameter, field in RUN_ID_FILTERS.items():
            if (found := query_parameter(self.request, parameter, parse_id)) is not None:
                runs = runs.filter(**{field: found})
        for parameter, choices in RUN_CHOICE_FILTERS.items():
            if (value := query_parameter(self.request, parameter, partial(parse_choice, choices=choices))) is not None:
                runs = runs.filter(**{parameter: value})
        if self.action == "list":  # the list shows none of the per-run JSON: never load it
            runs = runs.defer("summary", "environment", "metrics", "os_means", "failed_output")
        return runs

    def perform_create(self, serializer: RunSerializer) -> None:
        fields = dict(serializer.validated_data)
        reason = fields.pop("method_reason")
        method = spec_method(RunSpec.from_form_data(fields))
        client_host_ids = fields.pop("client_hosts")
        run = Run(**fields, queued_by=self.request.user)
        run.method_overrides = accepted_when_queued(method, reason, self.request.user)
        run_enqueue(run=run, client_host_ids=client_host_ids, request=self.request)
        serializer.instance = run

    @extend_schema(responses=RunSampleSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)  # every second, never paged
    def samples(self, request: Request, pk: str | None = None) -> Response:
        """The run's per-second samples, every one, in order."""
        run = self.get_object()
        return Response(RunSampleSerializer(run.samples.order_by("second"), many=True).data)
