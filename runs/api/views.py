"""The JSON API for automation: inventory (read), runs (queue, list, detail, cancel), samples."""

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.filtering import CheckedListParameters
from runs.api.jobs import ID_IN_URL, JobViewSet
from runs.api.notes import NotesAction
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
from runs.bench.filters import RunFilter
from runs.bench.services.runs import run_enqueue
from runs.bench.specs import RunSpec
from runs.builds.services.sources import SourcesUnknown, host_sources_for_page
from runs.inventory.filters import DeviceFilter
from runs.method.selectors import spec_method
from runs.method.services.acceptance import accepted_when_queued
from runs.models import Device, Host, PgInstall, Run


class HostViewSet(CheckedListParameters, viewsets.ReadOnlyModelViewSet):
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


class DeviceViewSet(CheckedListParameters, viewsets.ReadOnlyModelViewSet):
    lookup_value_regex = ID_IN_URL
    queryset = Device.objects.order_by("host__name", "name")
    serializer_class = DeviceSerializer
    permission_classes = [RolePermission]
    filterset_class = DeviceFilter


class PgInstallViewSet(CheckedListParameters, viewsets.ReadOnlyModelViewSet):
    lookup_value_regex = ID_IN_URL
    queryset = PgInstall.objects.order_by("host__name", "version")
    serializer_class = PgInstallSerializer
    permission_classes = [RolePermission]


class RunViewSet(NotesAction, JobViewSet):
    required_permission = JobViewSet.required_permission | NotesAction.notes_permission
    serializer_class = RunSerializer
    cancelled_serializer = RunSerializer
    detail_serializer = RunDetailSerializer
    filterset_class = RunFilter  # the run list page's filters (runs.bench.filters)

    def get_queryset(self) -> QuerySet[Run]:
        runs = Run.objects.select_related("server_host", "device", "pg_install").order_by("-created_at")
        runs = runs.prefetch_related("run_clients__host")  # client_hosts and their names, in one query
        if self.action == "retrieve":
            runs = runs.select_related("campaign", "configuration")  # named in the detail
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
