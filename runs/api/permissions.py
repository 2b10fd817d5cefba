"""The API's permissions are the pages' permissions: the same codenames, the same roles."""

from typing import Any

from rest_framework.permissions import BasePermission


class RolePermission(BasePermission):
    """Reads need runs.view_host; creating a run needs runs.queue_run; cancel needs runs.cancel_run."""

    def has_permission(self, request: Any, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        needed = getattr(view, "required_permission", {}).get(getattr(view, "action", None), "runs.view_host")
        return bool(user.has_perm(needed))
