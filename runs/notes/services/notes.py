"""Writing a run's or a campaign's note and tags: its owner (who queued the run, who made the
campaign) or an admin; audited with what changed."""

from typing import Any

from django.db import transaction
from django.http import HttpRequest

from runs.common.roles import owner_refusal
from runs.common.services.audit import audit_record
from runs.models import AuditAction, Campaign, Run, RunOrigin
from runs.notes.rules import Notes, NotesRefused, checked_notes

Annotatable = Run | Campaign


def notes_refusal(user: Any, target: Annotatable) -> str | None:
    """Why `user` may not change the target's notes (None: they may)."""
    if isinstance(target, Run) and target.origin == RunOrigin.IMPORTED:  # nobody queued it: who imported it owns it
        return owner_refusal(user, target.imported_by, "run", doing="annotate", needs="runs.queue_run", made="imported")
    if isinstance(target, Run):
        return owner_refusal(user, target.queued_by, "run", doing="annotate", needs="runs.queue_run")
    return owner_refusal(user, target.created_by, "campaign", doing="annotate", needs="runs.queue_run")


def notes_set(
    *, target: Annotatable, note: str, tags: list[str] | str, actor: Any, request: HttpRequest | None = None
) -> Notes:
    """Stores the note and tags; NotesRefused says why not (who may, or what is wrong), and nothing changes."""
    if refusal := notes_refusal(actor, target):
        raise NotesRefused("permission", refusal)
    notes = checked_notes(note, tags)
    kind = "run" if isinstance(target, Run) else "campaign"
    with transaction.atomic():
        locked = type(target).objects.select_for_update().only("pk", "note", "tags").get(pk=target.pk)
        before = Notes(locked.note, tuple(locked.tags))
        if before == notes:
            return notes
        type(target).objects.filter(pk=target.pk).update(note=notes.note, tags=list(notes.tags))
        audit_record(
            action=AuditAction.NOTES_CHANGED, target=target, actor=actor, request=request,
            message=_what_changed(kind, before, notes),
        )  # fmt: skip
    target.note, target.tags = notes.note, list(notes.tags)
    return notes


def _what_changed(kind: str, before: Notes, after: Notes) -> str:
    said = []
    if before.tags != after.tags:
        said.append(f"tags {', '.join(before.tags) or '(none)'} → {', '.join(after.tags) or '(none)'}")
    if before.note != after.note:
        said.append(f"note {_short(before.note)!r} → {_short(after.note)!r}")
    return f"the {kind}'s " + "; ".join(said)


def _short(text: str) -> str:
    return text if len(text) <= 200 else f"{text[:200]}…"
