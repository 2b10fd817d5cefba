"""Writes for share links: create (the token is returned once, only its hash is kept), revoke,
and resolve a token to its live link (counting the view).

A token is 32 random bytes (256 bits) in URL-safe base64; guessing one is hopeless, so the
hash can be a plain SHA-256 (no salt or slow hashing: there is no password to brute-force).
A comparison link keeps the run ids it covered when it was made, never a campaign: a campaign
that grows later does not change what was shared.
"""

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.http import HttpRequest
from django.utils import timezone

from runs.common.params import BadParameter
from runs.common.services.audit import audit_record
from runs.compare.query import MAX_RUNS, ComparisonQuery
from runs.compare.selectors.comparison import compare_runs
from runs.models import AuditAction, Campaign, Run, ShareKind, ShareLink

TOKEN_BYTES = 32  # 256 bits
MAX_EXPIRY = timedelta(days=365)
MAX_TITLE = 200
VIEW_PERMISSION = "runs.view_host"  # what a user needs to see runs and campaigns, and so to share them
# The admin role oversees everyone's work: the permission that lets it cancel anybody's run also
# lets it see and revoke anybody's share link.
OVERSEE_PERMISSION = "runs.cancel_any_run"

ShareTarget = Run | Campaign | ComparisonQuery


class ShareRefused(Exception):
    """The link cannot be made as asked; str() says why, for the user to read."""


class RevokeRefused(Exception):
    """The user may not revoke this link; str() says who may."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def oversees_shares(user: Any) -> bool:
    """Whether `user` sees and may revoke everybody's share links (the admin role, superusers)."""
    return bool(user.is_superuser or user.has_perm(OVERSEE_PERMISSION))


def share_create(
    *,
    kind: str,
    target: ShareTarget,
    by: Any,
    expires_at: datetime | None = None,
    title: str = "",
    request: HttpRequest | None = None,
) -> tuple[ShareLink, str]:
    """A new live link to `target`, and its token (shown to its owner once, then only the hash
    is left). ShareRefused says what is wrong with the request."""
    if not by.has_perm(VIEW_PERMISSION):
        raise ShareRefused("Sharing needs the viewer role: you may share only what you may see.")
    title = title.strip()
    if len(title) > MAX_TITLE:
        raise ShareRefused(f"The title is at most {MAX_TITLE} characters, not {len(title)}.")
    _check_expiry(expires_at)
    link = ShareLink(kind=kind, title=title, created_by=by, expires_at=expires_at, **_target_fields(kind, target))
    token = secrets.token_urlsafe(TOKEN_BYTES)
    link.token_hash = token_hash(token)
    with transaction.atomic():
        link.save()
        _audit(AuditAction.SHARE_CREATED, link, by, request, _describe(link))
    return link, token


def _check_expiry(expires_at: datetime | None) -> None:
    if expires_at is None:
        return
    now = timezone.now()
    if expires_at <= now:
        raise ShareRefused("The expiry must be in the future.")
    if expires_at > now + MAX_EXPIRY:
        raise ShareRefused(f"A link expires at most {MAX_EXPIRY.days} days from now (or never).")


def _target_fields(kind: str, target: ShareTarget) -> dict[str, Any]:
    """The link's fields that say what it shows; ShareRefused when kind and target disagree or
    the target cannot be shown."""
    if kind == ShareKind.RUN and isinstance(target, Run):
        return {"run": target}
    if kind == ShareKind.CAMPAIGN and isinstance(target, Campaign):
        return {"campaign": target}
    if kind == ShareKind.COMPARISON and isinstance(target, ComparisonQuery):
        try:
            run_ids = compare_runs(target).run_ids  # a campaign's runs as they are now; checks the options
        except BadParameter as exc:
            raise ShareRefused(f"This comparison cannot be shared: {exc}.") from exc
        if len(run_ids) > MAX_RUNS:
            raise ShareRefused(f"A shared comparison has at most {MAX_RUNS} runs, not {len(run_ids)}.")
        return {"run_ids": list(run_ids), "options": target.options()}
    allowed = ", ".join(ShareKind.values)
    raise ShareRefused(f"A share link is of a run, a campaign or a comparison ({allowed}), not {kind!r}.")


def _describe(link: ShareLink) -> str:
    expiry = f"expires {link.expires_at:%Y-%m-%d %H:%M %Z}" if link.expires_at else "never expires"
    return f"{link.target_label}, {expiry}" + (f", titled {link.title!r}" if link.title else "")


def share_revoke_refusal(link: ShareLink, by: Any) -> str | None:
    """Why `by` may not revoke the link (None: they may): its owner or the admin role may."""
    if link.created_by_id != by.pk and not oversees_shares(by):
        return f"Only {link.created_by.get_username()}, who made this link, or an admin can revoke it."
    return None


def share_revoke(*, link: ShareLink, by: Any, request: HttpRequest | None = None) -> ShareLink:
    """Revoke the link (its owner, or the admin role); from then on it answers 404. Revoking a
    revoked link changes nothing."""
    if refusal := share_revoke_refusal(link, by):
        raise RevokeRefused(refusal)
    with transaction.atomic():
        revoked = ShareLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_by=by
        )
        if revoked:
            _audit(AuditAction.SHARE_REVOKED, link, by, request, f"made by {link.created_by.get_username()}")
    link.refresh_from_db()
    return link


def share_resolve(token: str, *, count_view: bool = True) -> ShareLink | None:
    """The live link of this token (None for an unknown, revoked or expired one, alike); a page
    view is counted, the data its page fetches is not."""
    now = timezone.now()
    link = (
        ShareLink.objects.select_related("run", "campaign")
        .filter(token_hash=token_hash(token), revoked_at__isnull=True)
        .first()
    )
    if link is None or not link.is_live(now):
        return None
    if count_view:
        ShareLink.objects.filter(pk=link.pk).update(views=F("views") + 1, last_viewed_at=now)
    return link


def _audit(action: AuditAction, link: ShareLink, by: Any, request: HttpRequest | None, message: str) -> None:
    audit_record(
        action=action,
        target=link,
        actor=by,
        request=request,
        object_type="share link",
        object_repr=f"share link {link.pk} to {link.target_label}",
        message=message,
    )
