"""Accepting a method warning with a reason: the run keeps the warning, and says who accepted it
and why (Run.method_overrides), so nothing is hidden and nothing about the run changes."""

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from runs.common.services.audit import audit_record
from runs.method.outcome import Check
from runs.method.selectors import run_method
from runs.models import AuditAction, Run

MAX_REASON = 500


class AcceptRefused(Exception):
    """Why a warning cannot be accepted (shown to the user as it is)."""


def accepted_when_queued(checks: Iterable[Check], reason: str, by: Any) -> dict[str, dict[str, str]]:
    """Run.method_overrides for a run queued with `reason` for the warnings its form showed."""
    if not reason.strip():
        return {}
    return {check.key: _entry(reason.strip(), by) for check in checks if check.warns}


def method_warning_accept(run: Run, key: str, reason: str, by: Any, request: HttpRequest | None = None) -> None:
    """Record `reason` for accepting the run's warning `key`; AcceptRefused says what is wrong."""
    reason = reason.strip()
    if not reason:
        raise AcceptRefused("Say why the warning does not matter here: the reason is kept with the run.")
    if len(reason) > MAX_REASON:
        raise AcceptRefused(f"The reason is {len(reason)} characters long: at most {MAX_REASON} are kept.")
    warnings = {check.key: check for check in run_method(run) if check.warns}
    if key not in warnings:
        open_ones = ", ".join(warnings) or "none"
        raise AcceptRefused(f"Run {run.pk} has no open warning {key!r} (its open warnings: {open_ones}).")
    entry = _entry(reason, by)
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        locked.method_overrides = {**locked.method_overrides, key: entry}
        locked.save(update_fields=["method_overrides"])
        audit_record(
            action=AuditAction.RUN_WARNING_ACCEPTED,
            target=locked,
            actor=by,
            request=request,
            message=f"{warnings[key].title}: {reason}",
        )
    run.method_overrides = locked.method_overrides


def _entry(reason: str, by: Any) -> dict[str, str]:
    return {"reason": reason, "by": getattr(by, "username", str(by)), "at": timezone.now().isoformat()}
