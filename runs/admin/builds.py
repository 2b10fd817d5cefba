"""PostgreSQL builds in the admin: read-only (a build is queued from its page or the API and
changed only by its worker), with an action that removes builds from their hosts."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from runs.admin.read_only import InventoryReadOnly
from runs.builds.services.builds import BuildRefused
from runs.builds.services.remove import BuildRemoveFailed, build_remove
from runs.models import PgBuild


@admin.register(PgBuild)
class PgBuildAdmin(InventoryReadOnly):
    list_display = ["__str__", "host", "version", "block_size_kb", "wal_block_size_kb", "segment_size_gb",
                    "state", "step", "reused", "install", "queued_by", "created_at", "page"]  # fmt: skip
    list_filter = ["state", "host", "version", "block_size_kb", "source_kind"]
    search_fields = ["version", "package", "package_version", "tarball_path", "prefix", "key", "host__name"]
    list_select_related = ["host", "queued_by", "pg_install"]
    actions = ["remove_builds"]
    readonly_fields = ["page", "install"]

    def has_remove_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("runs.cancel_run"))

    @admin.display(description="install")
    def install(self, build: PgBuild) -> str:
        if build.pg_install is None:
            return "–"
        url = reverse("admin:runs_pginstall_change", args=[build.pg_install.pk])
        hidden = " (removed: offered to no new run)" if build.pg_install.removed_at else ""
        return format_html('<a href="{}">{}</a>{}', url, build.pg_install.bin_dir, hidden)

    @admin.display(description="its page")
    def page(self, build: PgBuild) -> str:
        return format_html('<a href="{}">build {}</a>', reverse("build-detail", args=[build.pk]), build.pk)

    @admin.action(description="Remove the selected builds from their hosts", permissions=["remove"])
    def remove_builds(self, request: HttpRequest, queryset: QuerySet[PgBuild]) -> None:
        for build in queryset.select_related("host", "queued_by"):
            try:
                self.message_user(request, build_remove(build=build, by=request.user, request=request))
            except (BuildRefused, BuildRemoveFailed) as exc:
                self.message_user(request, f"Build {build.pk}: {exc}", messages.ERROR)
