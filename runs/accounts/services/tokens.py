"""Writes for API tokens: create (the secret is returned once; knox keeps only its hash and its
first characters) and revoke (knox's row deleted: the token stops working at once). Each is one
audit event, in the same transaction as the change."""

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from knox.models import AuthToken

from runs.accounts.token_rules import TokenRefused, expiry_days, oversees_tokens, token_name
from runs.common.services.audit import audit_record
from runs.models import ApiTokenName, AuditAction


def token_create(
    *, user: Any, name: str, expires_days: str = "", by: Any = None, request: HttpRequest | None = None, via: str = ""
) -> tuple[AuthToken, str]:
    """A new token of `user` named `name`, ending in `expires_days` days (blank: never), and its
    secret, which nobody can read again. `by` made it (None: a command, audited as benchlab);
    `via` says how, for the audit log. TokenRefused says what is wrong, and nothing is made."""
    checked_name, days = token_name(name), expiry_days(expires_days)
    if not user.is_active:
        raise TokenRefused(f"{user.get_username()} is not an active account: its tokens would not work.")
    with transaction.atomic():
        token, secret = AuthToken.objects.create(user, expiry=timedelta(days=days) if days else None)
        ApiTokenName.objects.create(token=token, name=checked_name)
        expiry = f"expires {token.expiry:%Y-%m-%d %H:%M %Z}" if token.expiry else "never expires"
        _audit(AuditAction.API_TOKEN_CREATED, token, checked_name, by, request, f"{expiry}{via}")
    return token, secret


def token_revoke(*, token: AuthToken, by: Any, request: HttpRequest | None = None) -> None:
    """Revoke `token` (its owner, or the admin role): knox's row is deleted, with its name."""
    if token.user_id != by.pk and not oversees_tokens(by):
        raise TokenRefused(f"Only {token.user.get_username()}, whose token it is, or an admin can revoke it.")
    name = token_label(token)
    with transaction.atomic():
        deleted, _ = AuthToken.objects.filter(digest=token.digest).delete()
        if deleted:  # a second revoke (two tabs) changes nothing and records nothing
            _audit(AuditAction.API_TOKEN_REVOKED, token, name, by, request, "")


def token_label(token: AuthToken) -> str:
    """Its name, or what a token made before names existed (or in the admin) is called."""
    named = getattr(token, "benchlab_name", None)  # its reverse one-to-one: None without a row
    return named.name if named else "unnamed"


def _audit(action: AuditAction, token: AuthToken, name: str, by: Any, request: HttpRequest | None, note: str) -> None:
    # Named by its name, its first characters and its owner, as the admin's own records name it
    # (runs/admin/accounts.py): the digest is its key, too long for object_id and no name.
    audit_record(
        action=action,
        actor=by,
        request=request,
        object_type="api token",
        object_repr=f"token {name!r} ({token.token_key}…) of {token.user.get_username()}",
        message=note,
    )
