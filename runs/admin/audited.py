"""Admin pages that write the audit log: what an admin adds, changes or deletes is recorded
with who, when and from where, beside Django's own admin history."""

import json
from typing import Any

from django.contrib.admin.models import LogEntry
from django.db import models
from django.forms import Form
from django.http import HttpRequest

from runs.admin.answers import AnswersBadLookups
from runs.common.services.audit import audit_record
from runs.models import AuditAction

# Changing one of these fields is a change of credentials or of roles, not of an ordinary field.
CREDENTIAL_FIELDS = {
    "host_keys",
    "private_key_path",
    "new_private_key",
    "forget_private_key",
    "ssh_user",
    "password",
    "password1",
    "password2",
    "usable_password",
}
ROLE_FIELDS = {"groups", "user_permissions", "permissions", "is_superuser", "is_staff"}


def readable_change(message: Any) -> str:
    """The admin's change message (a JSON structure) as the text its history page shows."""
    text = json.dumps(message) if isinstance(message, list) else str(message)
    return LogEntry(change_message=text).get_change_message()


class AuditedAdmin(AnswersBadLookups):
    """Every add, change and delete through this admin page also goes into the audit log."""

    added_action = AuditAction.INVENTORY_ADDED
    changed_action = AuditAction.INVENTORY_CHANGED
    deleted_action = AuditAction.INVENTORY_DELETED
    deleted_message = "deleted"

    def construct_change_message(
        self, request: HttpRequest, form: Form, formsets: Any, add: bool = False
    ) -> list[dict[str, Any]]:
        # Kept on the request (admin instances serve every request) for log_change to classify.
        request._audit_changed_fields = set(form.changed_data)  # type: ignore[attr-defined]
        return super().construct_change_message(request, form, formsets, add)

    def audit_target(self, obj: models.Model) -> dict[str, Any]:
        """How the audit log names obj; a subclass can hide what must not be shown."""
        return {"target": obj}

    def log_addition(self, request: HttpRequest, obj: models.Model, message: Any) -> Any:
        entry = super().log_addition(request, obj, message)
        audit_record(
            action=self.added_action, request=request, message=readable_change(message), **self.audit_target(obj)
        )
        return entry

    def log_change(self, request: HttpRequest, obj: models.Model, message: Any) -> Any:
        entry = super().log_change(request, obj, message)
        audit_record(
            action=self.change_action(getattr(request, "_audit_changed_fields", set())),
            request=request,
            message=readable_change(message),
            **self.audit_target(obj),
        )
        return entry

    def change_action(self, fields: set[str]) -> AuditAction:
        if fields & ROLE_FIELDS:
            return AuditAction.ROLES_CHANGED
        if fields & CREDENTIAL_FIELDS:
            return AuditAction.CREDENTIALS_CHANGED
        return self.changed_action

    def deletion_message(self, obj: models.Model) -> str:
        """What deleting obj also deletes, for the audit log (a subclass says)."""
        return self.deleted_message

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        # Called before the deletion: the objects are still there to be named.
        for obj in queryset:
            audit_record(
                action=self.deleted_action,
                request=request,
                message=self.deletion_message(obj),
                **self.audit_target(obj),
            )
        return super().log_deletions(request, queryset)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Rows edited inline (a host's devices) get audit rows of their own: the log filtered by
        a device shows who allowed wiping it, even when that was done on its host's page."""
        super().save_related(request, form, formsets, change)
        for formset in formsets:
            for obj in formset.new_objects:
                audit_record(action=AuditAction.INVENTORY_ADDED, target=obj, request=request, message="added inline")
            for obj, fields in formset.changed_objects:
                changed = {getattr(formset.form.base_fields.get(name), "label", None) or name for name in fields}
                audit_record(
                    action=self.change_action(set(fields)),
                    target=obj,
                    request=request,
                    message=f"Changed {', '.join(sorted(str(label) for label in changed))} (inline).",
                )
            for obj in formset.deleted_objects:
                audit_record(
                    action=AuditAction.INVENTORY_DELETED,
                    request=request,
                    message="deleted inline",
                    object_type=obj._meta.model_name,
                    object_repr=str(obj),
                )
