"""The hardware inventory in the Django admin (the "admin" group's workplace)."""

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.views.decorators.debug import sensitive_post_parameters

from runs.admin.audited import AuditedAdmin
from runs.admin.forms import HostAdminForm
from runs.common.ssh_keys import parse_host_keys
from runs.common.units import binary_size
from runs.inventory.services.inventory import host_pin_key, inventory_set_flag
from runs.inventory.services.probe import host_probe
from runs.jobs.dispatch import queue_dispatch
from runs.lab.errors import LabError
from runs.lab.transport.ssh import fetch_host_key
from runs.models import Device, Host, PgInstall, RunState

admin.site.site_header = "benchlab inventory"
admin.site.site_title = "benchlab"
admin.site.index_title = "Hardware inventory"


def device_capacity(device: Device) -> str:
    """The capacity in binary units beside the bytes: "768 MiB", not 805306368 (nor "805.3 MB")."""
    return binary_size(device.capacity_bytes) if device.capacity_bytes else "–"


class DeviceInline(admin.TabularInline):
    model = Device
    extra = 0
    fields = ["name", "kind", "path", "model", "serial", "capacity_bytes", "capacity", "wipe_allowed"]
    readonly_fields = ["capacity"]
    show_change_link = True

    @admin.display(description="capacity")
    def capacity(self, device: Device) -> str:
        return device_capacity(device)


class PgInstallInline(admin.TabularInline):
    model = PgInstall
    extra = 0
    fields = ["bin_dir", "version", "block_size", "wal_block_size", "label", "removed_at", "missing_since"]
    readonly_fields = ["removed_at", "missing_since"]
    show_change_link = True


# Keeps a pasted private key out of error reports.
@method_decorator(sensitive_post_parameters("new_private_key"), name="changeform_view")
@admin.register(Host)
class HostAdmin(AuditedAdmin):
    form = HostAdminForm
    list_display = [
        "name",
        "address",
        "transport",
        "serves_postgres",
        "runs_clients",
        "enabled",
        "availability",
        "device_count",
        "cpu_cores",
        "memory",
        "probed_at",
    ]
    list_filter = ["transport", "enabled", "serves_postgres", "runs_clients", "distribution"]
    search_fields = ["name", "address", "hostname", "cpu_model", "notes"]
    inlines = [DeviceInline, PgInstallInline]
    actions = ["probe_now", "pin_host_keys", "enable_hosts", "disable_hosts", "build_postgres"]
    readonly_fields = [
        "claimed_by",
        "cleanup_pending_for",
        "unreachable_since",
        "unreachable_error",
        "unreachable_retry_at",
        "host_key_fingerprints",
        "stored_private_key",
        "hostname",
        "cpu_model",
        "cpu_cores",
        "memory",
        "kernel",
        "distribution",
        "probed_at",
        "facts",
        "created_at",
        "updated_at",
    ]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "name",
                    "enabled",
                    "allow_runs_on_benchlab_server",
                    ("claimed_by", "cleanup_pending_for"),
                    ("unreachable_since", "unreachable_retry_at"),
                    "unreachable_error",
                    ("serves_postgres", "runs_clients"),
                    "notes",
                ]
            },
        ),
        (
            "Connection",
            {
                "fields": [
                    "transport",
                    ("address", "ssh_port", "ssh_user"),
                    "host_keys",
                    "host_key_fingerprints",
                    "private_key_path",
                    "stored_private_key",
                    "new_private_key",
                    "forget_private_key",
                ]
            },
        ),
        (
            "Discovered by the probe",
            {
                "fields": [
                    "hostname",
                    "cpu_model",
                    ("cpu_cores", "memory"),
                    "kernel",
                    "distribution",
                    "probed_at",
                    "facts",
                ],
                "classes": ["collapse"],
            },
        ),
        ("Record", {"fields": [("created_at", "updated_at")]}),
    ]

    def save_model(self, request: HttpRequest, obj: Host, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if obj.enabled:  # enabled (again): the runs it held may start
            transaction.on_commit(queue_dispatch)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Host]:
        hosts = super().get_queryset(request).annotate(device_total=Count("devices"))
        return hosts.select_related("claimed_by", "claimed_by_build", "claimed_by_baseline")

    def deletion_message(self, obj: Any) -> str:
        devices = ", ".join(device.name for device in obj.devices.all()) or "none"
        installs = ", ".join(str(install) for install in obj.pg_installs.all()) or "none"
        return f"deleted, with its devices ({devices}) and PostgreSQL installs ({installs})"

    @admin.display(description="state")
    def availability(self, host: Host) -> str:
        """What the dispatcher sees: whether the host can take the next run, and if not, why."""
        if host.unreachable_since:
            return host.unreachable_note
        if host.cleanup_pending_for_id:
            return f"cleanup pending (run {host.cleanup_pending_for_id}, host unreachable)"
        if host.claimed_by:
            run = host.claimed_by
            doing = "starting" if run.state == RunState.QUEUED else run.get_state_display()
            return f"busy with run {run.pk} ({doing})"
        if host.claimed_by_build:
            return f"busy with build {host.claimed_by_build_id} ({host.claimed_by_build.get_state_display()})"
        if host.claimed_by_baseline:
            baseline = host.claimed_by_baseline
            return f"busy with fio baseline {baseline.pk} ({baseline.get_state_display()})"
        return "free" if host.enabled else "disabled"

    @admin.display(description="devices", ordering="device_total")
    def device_count(self, host: Host) -> int:
        return getattr(host, "device_total", 0)

    @admin.display(description="RAM", ordering="memory_bytes")
    def memory(self, host: Host) -> str:
        return binary_size(host.memory_bytes) if host.memory_bytes else "–"

    @admin.display(description="pinned host key fingerprints")
    def host_key_fingerprints(self, host: Host) -> str:
        keys = parse_host_keys(host.host_keys) if host.host_keys else []
        if not keys:
            return "none pinned: SSH connections will be refused"
        return format_html_join("", "<div><code>{} {}</code></div>", ((k.key_type, k.fingerprint) for k in keys))

    @admin.display(description="stored private key")
    def stored_private_key(self, host: Host) -> str:
        # Only the public fingerprint: the key itself is never decrypted for display.
        return f"stored, encrypted ({host.private_key_fingerprint})" if host.has_stored_private_key else "none"

    @admin.action(description="Probe now (hardware, disks, PostgreSQL installs)", permissions=["change"])
    def probe_now(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        for host in queryset:
            try:
                facts = host_probe(host=host, request=request)
            except (LabError, ValidationError) as exc:
                self.message_user(request, f"{host.name}: probe failed: {exc}", messages.ERROR)
                continue
            installs = ", ".join(f"{pg.version} ({pg.block_size // 1024} kB)" for pg in facts.pg_installs) or "none"
            self.message_user(
                request,
                f"{host.name}: {facts.cpu_cores} cores, {facts.distribution}, kernel {facts.kernel}, "
                f"{len(facts.block_devices)} block devices, PostgreSQL installs: {installs}.",
                messages.SUCCESS,
            )
            for install in host.pg_installs.filter(missing_since__isnull=False, removed_at__isnull=True):
                self.message_user(request, f"{install} ({install.bin_dir}): {install.missing_note}.", messages.WARNING)

    @admin.action(description="Fetch and pin host keys…", permissions=["change"])
    def pin_host_keys(self, request: HttpRequest, queryset: QuerySet[Host]) -> TemplateResponse | None:
        ssh_hosts = queryset.filter(transport=Host.Transport.SSH)
        if request.POST.get("confirm") == "yes":
            for host in ssh_hosts:
                self._pin_shown_key(request, host, request.POST.get(f"fingerprint-{host.pk}", ""))
            return None
        offered = []
        for host in ssh_hosts:
            try:
                line, fingerprint = fetch_host_key(host.address, host.ssh_port)
            except LabError as exc:
                self.message_user(request, f"{host.name}: {exc}", messages.ERROR)
                continue
            pinned = parse_host_keys(host.host_keys) if host.host_keys else []
            offered.append((host, line, fingerprint, pinned))
        if not offered:
            return None
        context = self.admin_site.each_context(request) | {
            "offered": offered,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/runs/host/pin_host_keys.html", context)

    def _pin_shown_key(self, request: HttpRequest, host: Host, shown: str) -> None:
        # Fetched again: pin only the key whose fingerprint the admin was shown and approved.
        try:
            line, fingerprint = fetch_host_key(host.address, host.ssh_port)
        except LabError as exc:
            self.message_user(request, f"{host.name}: {exc}", messages.ERROR)
            return
        if fingerprint != shown:
            self.message_user(
                request, f"{host.name}: the host now offers {fingerprint}, not {shown}; nothing pinned.", messages.ERROR
            )
            return
        host_pin_key(host=host, line=line, fingerprint=fingerprint, request=request)
        self.message_user(request, f"{host.name}: pinned {line.split()[0]} {fingerprint}.", messages.SUCCESS)

    def has_build_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("runs.queue_run"))

    @admin.action(description="Build PostgreSQL on this host…", permissions=["build"])
    def build_postgres(self, request: HttpRequest, queryset: QuerySet[Host]) -> HttpResponseRedirect | None:
        """To the build form, with the host chosen (a build is for one host)."""
        hosts = list(queryset[:2])
        if len(hosts) != 1:
            self.message_user(request, "Choose exactly one host to build PostgreSQL on.", messages.ERROR)
            return None
        return HttpResponseRedirect(f"{reverse('build-new')}?host={hosts[0].pk}")

    @admin.action(description="Enable the selected hosts", permissions=["change"])
    def enable_hosts(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        count = inventory_set_flag(request=request, queryset=queryset, field="enabled", value=True)
        self.message_user(request, f"Enabled {count} host(s).", messages.SUCCESS)

    @admin.action(description="Disable the selected hosts (they take no new runs)", permissions=["change"])
    def disable_hosts(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        count = inventory_set_flag(request=request, queryset=queryset, field="enabled", value=False)
        self.message_user(request, f"Disabled {count} host(s).", messages.SUCCESS)


@admin.register(Device)
class DeviceAdmin(AuditedAdmin):
    list_display = ["name", "host", "kind", "path", "model", "capacity", "wipe_allowed"]
    list_filter = ["kind", "wipe_allowed", "host"]
    search_fields = ["name", "path", "model", "serial", "host__name", "notes"]
    list_select_related = ["host"]
    autocomplete_fields = ["host"]
    fields = [
        "host",
        "name",
        "kind",
        "path",
        "model",
        "serial",
        ("capacity_bytes", "capacity"),  # the bytes to edit, and what they amount to
        "wipe_allowed",
        "notes",
        # The vendor's claims, shown beside fio's measurements on the device's page.
        ("claimed_seq_read_mb_s", "claimed_seq_write_mb_s"),
        ("claimed_rand_read_iops", "claimed_rand_write_iops"),
        "claimed_latency_ms",
        "page",
        "kept_for_next_run",
        ("created_at", "updated_at"),
    ]
    readonly_fields = ["capacity", "page", "kept_for_next_run", "created_at", "updated_at"]
    actions = ["forbid_wiping"]

    @admin.display(description="its page")
    def page(self, device: Device) -> str:
        if device.pk is None:
            return "–"
        url = reverse("device-detail", args=[device.pk])
        measure = f"{reverse('baseline-new')}?device={device.pk}"
        return format_html(
            '<a href="{}">device page (fio history, claims vs measured)</a> · <a href="{}">Measure with fio…</a>',
            url,
            measure,
        )

    @admin.display(description="kept for a campaign's next run")
    def kept_for_next_run(self, device: Device) -> str:
        """A campaign's storage left mounted (stopped database) for its next run on this device."""
        kept = device.kept_setup
        if not kept:
            return "nothing"
        setup = kept.get("setup") or {}
        return f"{setup.get('mountpoint', '?')}, left by run {kept.get('run')} of campaign {kept.get('campaign')}"

    @admin.display(description="capacity", ordering="capacity_bytes")
    def capacity(self, device: Device) -> str:
        return device_capacity(device)

    # Only the safe direction is a bulk action; allowing a wipe is a per-device decision.
    @admin.action(description="Forbid wiping the selected devices", permissions=["change"])
    def forbid_wiping(self, request: HttpRequest, queryset: QuerySet[Device]) -> None:
        count = inventory_set_flag(request=request, queryset=queryset, field="wipe_allowed", value=False)
        self.message_user(request, f"{count} device(s) can no longer be wiped.", messages.SUCCESS)


@admin.register(PgInstall)
class PgInstallAdmin(AuditedAdmin):
    list_display = [
        "__str__",
        "host",
        "version",
        "block_size",
        "wal_block_size",
        "bin_dir",
        "removed_at",
        "missing_since",
    ]
    list_filter = ["version", "block_size", "wal_block_size", "host", ("missing_since", admin.EmptyFieldListFilter)]
    search_fields = ["label", "version", "bin_dir", "host__name"]
    list_select_related = ["host"]
    autocomplete_fields = ["host"]
    readonly_fields = ["removed_at", "missing_since", "created_at", "updated_at"]
