"""Writes to the audit log (runs.models.audit): one function, called where the action happens."""

from typing import Any

from django.db import models
from django.http import HttpRequest

from benchlab.client_ip import client_ip
from runs.common.db_retry import with_database_retry
from runs.models import AuditAction, AuditEvent

BENCHLAB = "benchlab"  # the actor of what benchlab does on its own


def audit_record(
    *,
    action: AuditAction,
    target: models.Model | None = None,
    actor: Any = None,
    request: HttpRequest | None = None,
    message: str = "",
    object_type: str = "",
    object_repr: str = "",
) -> AuditEvent:
    """Record that `actor` (or the request's user) did `action` to `target`.

    `object_type` and `object_repr` name a target that is no row (or no longer one)."""
    if actor is None and request is not None and request.user.is_authenticated:
        actor = request.user
    fields: dict[str, Any] = {
        "actor": actor if actor is not None and actor.pk is not None else None,
        "actor_name": actor.get_username() if actor is not None else BENCHLAB,
        "address": client_ip(request) if request is not None else None,
        "action": action,
        "object_type": object_type or (target._meta.model_name if target is not None else "") or "",
        "object_id": str(target.pk) if target is not None and target.pk is not None else "",
        "object_repr": (object_repr or (str(target) if target is not None else ""))[:300],
        "message": message,
    }
    if request is not None:
        return AuditEvent.objects.create(**fields)  # a person's request fails now; they try again
    # benchlab's own (a worker records a device formatted mid-run): retried through a restart of
    # its database. Not exactly idempotent: if the connection broke after the insert committed
    # but before PostgreSQL's answer arrived, the event is recorded twice, a line too many in a
    # log read by people; failing the run over it would be worse. Inside a transaction it is not
    # retried (with_database_retry): that transaction's owner decides.
    return with_database_retry(lambda: AuditEvent.objects.create(**fields), f"recording {action}")
