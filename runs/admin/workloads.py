"""The workload library in the admin: admins add scripts and new versions of them. A shipped
version, or one a run has used, is read-only here (a run must keep meaning what it ran): its page
offers a new version instead, filled in from it. What is saved is checked by the model's clean()
(the same script checks as a custom script's, and the parameters' declarations)."""

from typing import Any

from django.contrib import admin
from django.db.models import Max
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from runs.admin.audited import AuditedAdmin
from runs.models import WorkloadScript

EDITABLE = ["name", "version", "title", "description", "script", "parameters"]


def locked_reason(script: WorkloadScript) -> str:
    """Why a version cannot be edited, or "" if it can."""
    if script.pk is None:
        return ""
    if script.shipped:
        return "Shipped with benchlab"
    used = script.runs.count()
    return f"Used by {used} run{'s' if used != 1 else ''}" if used else ""


@admin.register(WorkloadScript)
class WorkloadScriptAdmin(AuditedAdmin):
    list_display = ["name", "version", "title", "shipped", "run_count"]
    list_filter = ["shipped", "name"]
    search_fields = ["name", "title", "description"]

    @admin.display(description="runs")
    def run_count(self, script: WorkloadScript) -> int:
        return script.runs.count()

    @admin.display(description="editing")
    def editing(self, script: WorkloadScript) -> str:
        reason = locked_reason(script)
        if not reason:
            return "This version has not been used yet: it may still be changed."
        url = reverse("admin:runs_workloadscript_add") + f"?new_version_of={script.pk}"
        return format_html(
            '{}: this version cannot be edited (runs keep the text they ran). <a href="{}" id="new-version">'
            "Add a new version</a> from it instead.",
            reason,
            url,
        )

    def get_readonly_fields(self, request: HttpRequest, obj: WorkloadScript | None = None) -> list[str]:
        locked = obj is not None and bool(locked_reason(obj))
        return ["editing", "shipped", *(EDITABLE if locked else [])]

    def has_delete_permission(self, request: HttpRequest, obj: WorkloadScript | None = None) -> bool:
        return super().has_delete_permission(request, obj) and not (obj is not None and locked_reason(obj))

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """?new_version_of=<id>: the form filled in from that version, with the next number."""
        initial = super().get_changeform_initial_data(request)
        raw = str(request.GET.get("new_version_of", ""))
        wanted = raw.isascii() and raw.isdigit() and len(raw) < 12
        source = WorkloadScript.objects.filter(pk=int(raw)).first() if wanted else None
        if source is None:
            return initial
        newest = WorkloadScript.objects.filter(name=source.name).aggregate(Max("version"))["version__max"]
        return initial | {name: getattr(source, name) for name in EDITABLE} | {"version": newest + 1}
