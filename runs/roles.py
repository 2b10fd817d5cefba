"""The three roles of benchlab users and what each may do.

Groups are created by a data migration from this table; views check permissions, never
group names, so a site can also grant single permissions to single users.
"""

VIEWER = "viewer"
OPERATOR = "operator"
ADMIN = "admin"

_READ = ["runs.view_host", "runs.view_device", "runs.view_pginstall"]
_OPERATE = ["runs.queue_run", "runs.cancel_run"]
_INVENTORY = [
    f"runs.{action}_{model}" for model in ("host", "device", "pginstall") for action in ("add", "change", "delete")
]

ROLE_PERMISSIONS: dict[str, list[str]] = {
    VIEWER: _READ,
    OPERATOR: _READ + _OPERATE,
    ADMIN: _READ + _OPERATE + _INVENTORY,
}

# Who may enter the Django admin (the inventory) without being a superuser.
ADMIN_SITE_PERMISSION = "runs.change_host"
