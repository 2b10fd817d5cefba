"""Accounts, API tokens, login locks and the audit log in the admin.

Users, groups, tokens and login locks keep the admin pages their packages provide; they are
registered again here with AuditedAdmin, so creating a user, changing someone's roles, issuing
or revoking a token and lifting a login lock are in the audit log. The audit log itself is
read-only for everyone.
"""

from typing import Any

from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db import models
from django.http import HttpRequest
from knox.admin import AuthTokenAdmin
from knox.models import AuthToken

from runs.admin.answers import AnswersBadLookups
from runs.admin.audited import AuditedAdmin
from runs.models import AuditAction, AuditEvent

for model in (User, Group, AuthToken, AccessAttempt, AccessLog, AccessFailureLog):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


@admin.register(User)
class AuditedUserAdmin(AuditedAdmin, UserAdmin):
    added_action = AuditAction.ACCOUNT_ADDED
    changed_action = AuditAction.ACCOUNT_CHANGED
    deleted_action = AuditAction.ACCOUNT_DELETED

    def deletion_message(self, obj: Any) -> str:
        tokens = AuthToken.objects.filter(user=obj).count()
        return f"deleted, with {tokens} API token(s), which stop working"


@admin.register(Group)
class AuditedGroupAdmin(AuditedAdmin, GroupAdmin):
    # A group is a role: every change to one changes what its members may do.
    added_action = AuditAction.ROLES_CHANGED
    changed_action = AuditAction.ROLES_CHANGED
    deleted_action = AuditAction.ROLES_CHANGED


@admin.register(AuthToken)
class AuditedAuthTokenAdmin(AuditedAdmin, AuthTokenAdmin):
    """knox's admin: a new token is shown once, in the message after saving; only its hash is kept."""

    added_action = AuditAction.API_TOKEN_CREATED
    deleted_action = AuditAction.API_TOKEN_REVOKED
    list_display = ("token_key", "name", "user", "created", "expiry")
    list_select_related = ("user", "benchlab_name")

    @admin.display(description="name")
    def name(self, obj: AuthToken) -> str:
        # Named on the API tokens page (runs.models.tokens); one made here has none.
        named = getattr(obj, "benchlab_name", None)
        return named.name if named else "–"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # knox's change form would let anyone who may change tokens set a hash of their choosing.
        return False

    def audit_target(self, obj: models.Model) -> dict[str, Any]:
        token: Any = obj
        # Named by its first characters and owner: the digest is its primary key, not its name.
        return {"object_type": "api token", "object_repr": f"token {token.token_key}… of {token.user}"}


@admin.register(AccessAttempt)
class AuditedAccessAttemptAdmin(AuditedAdmin, AccessAttemptAdmin):
    """Deleting an access attempt lifts that login lock (django-axes)."""

    deleted_action = AuditAction.ACCOUNT_CHANGED
    deleted_message = "login lock lifted (its failed attempts were deleted)"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # an attempt is a record; lifting the lock is deleting it

    def audit_target(self, obj: models.Model) -> dict[str, Any]:
        attempt: Any = obj
        return {
            "object_type": "login lock",
            "object_repr": f"login lock of {attempt.username or 'no user name'} from {attempt.ip_address}",
        }


class LoginHistoryAdmin(AnswersBadLookups):
    """axes's login history is a record like the audit log: readable, not changed or deleted."""

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AccessLog)
class ReadOnlyAccessLogAdmin(LoginHistoryAdmin, AccessLogAdmin):
    pass


@admin.register(AccessFailureLog)
class ReadOnlyAccessFailureLogAdmin(LoginHistoryAdmin, AccessFailureLogAdmin):
    pass


@admin.register(AuditEvent)
class AuditEventAdmin(AnswersBadLookups):
    list_display = ["at", "actor_name", "action", "object_type", "object_repr", "address", "message"]
    list_filter = ["action", "object_type", "at", "actor_name"]
    search_fields = ["actor_name", "object_repr", "object_id", "message", "address"]
    list_per_page = 100

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False
