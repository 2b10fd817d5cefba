"""Share links in the admin: everybody's links for the admin role to see and revoke.

A link is made on the pages it shares (its token is shown once, to its owner) and never edited
or deleted here: revoking keeps it, with who revoked it, and writes the audit log. The token's
hash is never shown.
"""

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from runs.admin.answers import AnswersBadLookups
from runs.compare.services.shares import oversees_shares, share_revoke
from runs.models import ShareLink


@admin.register(ShareLink)
class ShareLinkAdmin(AnswersBadLookups):
    list_display = ["id", "kind", "target_label", "title", "created_by", "created_at", "expires_at", "state", "views"]
    list_filter = ["kind", "created_at", "expires_at", "revoked_at"]
    search_fields = ["title", "created_by__username"]
    fields = readonly_fields = (
        "kind",
        "title",
        "run",
        "campaign",
        "run_ids",
        "options",
        "created_by",
        "created_at",
        "expires_at",
        "revoked_at",
        "revoked_by",
        "views",
        "last_viewed_at",
    )
    list_select_related = ["created_by"]
    actions = ["revoke"]

    @admin.display(description="shows")
    def target_label(self, link: ShareLink) -> str:
        return link.target_label

    @admin.display(description="state")
    def state(self, link: ShareLink) -> str:
        if link.revoked_at is not None:
            return "revoked"
        return "live" if link.is_live() else "expired"

    @admin.action(description="Revoke the selected links", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ShareLink]) -> None:
        links = list(queryset.filter(revoked_at__isnull=True).select_related("created_by"))
        for link in links:
            share_revoke(link=link, by=request.user, request=request)
        self.message_user(request, f"{len(links)} link(s) revoked: they now answer “not found”.", messages.SUCCESS)

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return oversees_shares(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return oversees_shares(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a link is made on the page it shares, where its token can be shown once

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked, not deleted: the list keeps who shared what
