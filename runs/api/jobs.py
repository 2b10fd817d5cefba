"""What the API's job viewsets (runs, PostgreSQL builds, fio baselines) share: ids in the URL,
the role's permissions, queueing's own throttle, cancel (runs.api.cancel), and a serializer
per action: the list's, the detail's and the create's."""

from typing import Any

from rest_framework import mixins, viewsets

from runs.api.cancel import CancelAction
from runs.api.filtering import CheckedListParameters
from runs.api.permissions import RolePermission
from runs.common.params import IdConverter

ID_IN_URL = IdConverter.regex  # anything else is no object at all (404), never a database error


class QueueThrottled:
    """Queueing has its own rate (settings: DEFAULT_THROTTLE_RATES["queue"]); reads only the user's."""

    queue_actions: tuple[str, ...] = ("create",)

    @property
    def throttle_scope(self) -> str | None:
        return "queue" if getattr(self, "action", None) in self.queue_actions else None


class JobViewSet(
    CheckedListParameters, QueueThrottled, CancelAction, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    lookup_value_regex = ID_IN_URL
    permission_classes = [RolePermission]
    required_permission = {"create": "runs.queue_run", "cancel": "runs.cancel_run"}
    detail_serializer: Any  # retrieve's; the list's (and cancel's) is cancelled_serializer
    create_serializer: Any = None  # None: the list's

    def get_serializer_class(self) -> Any:
        if self.action == "create" and self.create_serializer is not None:
            return self.create_serializer
        return self.detail_serializer if self.action == "retrieve" else self.cancelled_serializer
