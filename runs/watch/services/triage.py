"""Triage of a stored change point: acknowledged (seen, being looked at), expected (explained: a
note says why, such as "firmware 2.1 applied"), or open again. Each change is audited; operators
and admins may triage, viewers see."""

from typing import Any

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from runs.common.services.audit import audit_record
from runs.models import NOTE_MAX, AuditAction, ChangePointState, StoredChangePoint

TRIAGE_PERMISSION = "runs.queue_run"  # operator and admin (runs.common.roles)


class TriageRefused(ValueError):
    def __init__(self, field: str, text: str) -> None:
        super().__init__(text)
        self.field = field


def triage_errors(state: str, note: str) -> dict[str, str]:
    errors = {}
    if state not in ChangePointState.values:
        errors["state"] = f"state must be one of {', '.join(ChangePointState.values)}, not {state[:40]!r}"
    if len(note) > NOTE_MAX:
        errors["note"] = f"a note is at most {NOTE_MAX} characters, not {len(note)}"
    elif state == ChangePointState.EXPECTED and not note.strip():
        errors["note"] = "marking a change point expected needs a note saying why (such as 'firmware 2.1 applied')"
    return errors


def change_point_triage(
    *, point: StoredChangePoint, state: str, note: str = "", actor: Any, request: HttpRequest | None = None
) -> StoredChangePoint:
    """Set the change point's state (and note: kept when none is given, except on reopening)."""
    if not actor.has_perm(TRIAGE_PERMISSION):
        raise PermissionError("triage needs the operator or admin role")
    errors = triage_errors(state, note)
    if errors:
        field, text = next(iter(errors.items()))
        raise TriageRefused(field, text)
    with transaction.atomic():
        point = StoredChangePoint.objects.select_for_update().get(pk=point.pk)
        before = point.state
        point.state = state
        point.note = note.strip() or (point.note if state != ChangePointState.OPEN else "")
        point.triaged_by = actor
        point.triaged_at = timezone.now()
        point.save(update_fields=["state", "note", "triaged_by", "triaged_at"])
        audit_record(
            action=AuditAction.CHANGE_POINT_TRIAGED, target=point, actor=actor, request=request,
            object_type="change point", message=f"{before} → {state}" + (f": {point.note}" if point.note else ""),
        )  # fmt: skip
    return point
