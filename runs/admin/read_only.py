"""A job's admin list that the inventory's readers may see and nobody edits: builds and fio
baselines are queued from their pages or the API and changed only by their workers."""

from typing import Any

from django.http import HttpRequest

from runs.admin.answers import AnswersBadLookups


class InventoryReadOnly(AnswersBadLookups):
    # Viewing is the inventory's reading right; nobody adds, changes or deletes a job here.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("runs.view_host"))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("runs.view_host"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
