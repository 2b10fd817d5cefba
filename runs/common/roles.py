"""The three roles of benchlab users and what each may do.

Groups are created by data migrations from this table; views check permissions, never
group names, so a site can also grant single permissions to single users.
"""

from typing import Any

VIEWER = "viewer"
OPERATOR = "operator"
ADMIN = "admin"

_READ = ["runs.view_host", "runs.view_device", "runs.view_pginstall"]
_OPERATE = ["runs.queue_run", "runs.cancel_run"]
_INVENTORY = [
    f"runs.{action}_{model}" for model in ("host", "device", "pginstall") for action in ("add", "change", "delete")
]
_OVERSEE = ["runs.cancel_any_run", "runs.view_auditevent"]
_LIBRARY = [f"runs.{action}_workloadscript" for action in ("view", "add", "change", "delete")]

ROLE_PERMISSIONS: dict[str, list[str]] = {
    VIEWER: _READ,
    OPERATOR: _READ + _OPERATE,
    ADMIN: _READ + _OPERATE + _INVENTORY + _OVERSEE + _LIBRARY,
}

# Who may enter the Django admin (the inventory) without being a superuser.
ADMIN_SITE_PERMISSION = "runs.change_host"

_WITH_ARTICLE = {VIEWER: "a viewer", OPERATOR: "an operator", ADMIN: "an admin"}


def role_of(user: Any) -> str | None:
    """The highest role whose every permission `user` holds (a superuser: admin), or None. Read from
    permissions, not group names, as the views check them."""
    return next((role for role in (ADMIN, OPERATOR, VIEWER) if user.has_perms(ROLE_PERMISSIONS[role])), None)


def role_needed(permission: str) -> str:
    """The lowest role that holds `permission` (admin for one no role lists)."""
    return next((role for role, held in ROLE_PERMISSIONS.items() if permission in held), ADMIN)


def you_are(user: Any) -> str:
    """ "you are a viewer", for a sentence that says why a control is not theirs."""
    role = role_of(user)
    return f"you are {_WITH_ARTICLE[role]}" if role else "you have no role in benchlab yet"


def role_refusal(user: Any, permission: str, doing: str) -> str | None:
    """Why `user` may not `doing` ("queue runs"), which needs `permission`, as a page says it beside
    a disabled control: "Operators queue runs; you are a viewer (an admin gives roles)." None: they may."""
    if user.has_perm(permission):
        return None
    return f"{role_needed(permission).capitalize()}s {doing}; {you_are(user)} (an admin gives roles)."


def cancel_refusal(user: Any, run: Any) -> str | None:
    """Why `user` may not cancel `run` (None: they may). Operators cancel their own runs and the
    runs of their campaigns (an admin's retry queues runs as the admin); admins anybody's."""
    refusal = owner_refusal(user, run.queued_by, "run")
    if refusal is None or run.campaign_id is None:
        return refusal
    return refusal if owner_refusal(user, run.campaign.created_by, "campaign") else None


def owner_refusal(
    user: Any, owner: Any, thing: str, doing: str = "cancel", needs: str = "runs.cancel_run", made: str = "queued"
) -> str | None:
    """Why `user` may not `doing` (cancel, retry, remove) the `thing` that `owner` (a user, or
    None when gone) queued, or None: an operator (`needs`) their own, admins anybody's."""
    if user.has_perm("runs.cancel_any_run"):
        return None
    if not user.has_perm(needs):
        return f"To {doing} {thing}s needs the {role_needed(needs)} role; {you_are(user)}."
    if owner is not None and owner.pk == user.pk:
        return None
    name = owner.get_username() if owner is not None else "somebody no longer in benchlab"
    return f"Only {name}, who {made} this {thing}, or an admin can {doing} it."
