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

ROLE_PERMISSIONS: dict[str, list[str]] = {
    VIEWER: _READ,
    OPERATOR: _READ + _OPERATE,
    ADMIN: _READ + _OPERATE + _INVENTORY + _OVERSEE,
}

# Who may enter the Django admin (the inventory) without being a superuser.
ADMIN_SITE_PERMISSION = "runs.change_host"


def cancel_refusal(user: Any, run: Any) -> str | None:
    """Why `user` may not cancel `run` (None: they may). Operators cancel their own runs;
    admins anybody's."""
    if user.has_perm("runs.cancel_any_run"):
        return None
    if not user.has_perm("runs.cancel_run"):
        return "Cancelling runs needs the operator role."
    if run.queued_by_id is not None and run.queued_by_id == user.pk:
        return None
    owner = run.queued_by.get_username() if run.queued_by_id else "somebody no longer in benchlab"
    return f"Only {owner}, who queued this run, or an admin can cancel it."
