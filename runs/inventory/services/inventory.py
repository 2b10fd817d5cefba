"""Writes to the inventory made from the admin's actions, each with its audit row."""

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from runs.common.services.audit import audit_record
from runs.jobs.dispatch import queue_dispatch
from runs.models import AuditAction, Host


@transaction.atomic
def host_pin_key(*, host: Host, line: str, fingerprint: str, request: HttpRequest) -> None:
    """Pin the host key an admin was shown and approved (replacing what was pinned)."""
    host.host_keys = line
    host.save(update_fields=["host_keys", "updated_at"])
    audit_record(
        action=AuditAction.CREDENTIALS_CHANGED,
        target=host,
        request=request,
        message=f"pinned host key {line.split()[0]} {fingerprint}",
    )


@transaction.atomic
def inventory_set_flag(*, queryset: QuerySet[Any], field: str, value: bool, request: HttpRequest) -> int:
    """A bulk action's change of one flag, with an audit row per object it changed."""
    changed = list(queryset.exclude(**{field: value}))
    for obj in changed:
        setattr(obj, field, value)
        obj.save(update_fields=[field, "updated_at"])
        audit_record(action=AuditAction.INVENTORY_CHANGED, target=obj, request=request, message=f"{field} = {value}")
    if isinstance(obj, Host) and field == "enabled" and value:
        transaction.on_commit(queue_dispatch)  # the runs these hosts held may start
    return len(changed)
