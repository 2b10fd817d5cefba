"""The API's permissions are the pages' permissions: the same codenames, the same roles."""

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission

READ = "runs.view_host"


class RolePermission(BasePermission):
    """Reads need runs.view_host; every action that writes names its permission in the view's
    `required_permission` (creating a run: runs.queue_run, cancelling: runs.cancel_run).

    An action that writes and names none is refused: a new one is closed until it says who
    may use it. A method no action answers needs only a reader, who is then told 405."""

    def has_permission(self, request: Any, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        action = getattr(view, "action", None)
        required: dict[str, str] = getattr(view, "required_permission", {})
        if action in required:
            return bool(user.has_perm(required[action]))
        if action is None or request.method in SAFE_METHODS:
            return bool(user.has_perm(READ))
        return False
