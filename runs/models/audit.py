"""The audit log: who did what, and when, for every destructive or administrative action.

Rows are only ever added (runs.common.services.audit); the admin shows them to the admin role and
offers no way to add, change or delete one. The actor's name is copied, so a deleted user's
actions keep their author.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditAction(models.TextChoices):
    RUN_QUEUED = "run_queued", "run queued"
    RUN_CANCELLED = "run_cancelled", "run cancelled"
    RUN_IMPORTED = "run_imported", "run imported (pgbench output uploaded)"
    RUN_WARNING_ACCEPTED = "run_warning_accepted", "run: method warning accepted"
    CAMPAIGN_QUEUED = "campaign_queued", "campaign queued"
    CAMPAIGN_CANCELLED = "campaign_cancelled", "campaign cancelled (all or one configuration)"
    CAMPAIGN_RETRIED = "campaign_retried", "campaign: failed runs queued again"
    SCHEDULE_CREATED = "schedule_created", "campaign schedule created"
    SCHEDULE_CHANGED = "schedule_changed", "campaign schedule changed (paused, resumed, its times)"
    SCHEDULE_DELETED = "schedule_deleted", "campaign schedule deleted"
    SCHEDULE_FIRED = "schedule_fired", "campaign schedule: a round asked for now"
    CHANGE_POINT_TRIAGED = "change_point_triaged", "change point triaged (acknowledged, expected, reopened)"
    SUBSCRIBER_ADDED = "subscriber_added", "schedule subscriber added"
    SUBSCRIBER_REMOVED = "subscriber_removed", "schedule subscriber removed"
    SHARE_CREATED = "share_created", "share link created"
    SHARE_REVOKED = "share_revoked", "share link revoked"
    DEVICE_FORMATTED = "device_formatted", "device formatted (mkfs)"
    DEVICE_HEALTH_READ = "device_health_read", "device health read (smartctl)"
    INVENTORY_ADDED = "inventory_added", "inventory: added"
    INVENTORY_CHANGED = "inventory_changed", "inventory: changed"
    INVENTORY_DELETED = "inventory_deleted", "inventory: deleted"
    CREDENTIALS_CHANGED = "credentials_changed", "credentials changed (keys, passwords)"
    ACCOUNT_ADDED = "account_added", "account added"
    ACCOUNT_CHANGED = "account_changed", "account changed"
    ACCOUNT_DELETED = "account_deleted", "account deleted"
    ROLES_CHANGED = "roles_changed", "roles or permissions changed"
    API_TOKEN_CREATED = "api_token_created", "API token created"
    API_TOKEN_REVOKED = "api_token_revoked", "API token revoked"
    NOTES_CHANGED = "notes_changed", "notes or tags changed"


class AuditEvent(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150, help_text="The user's name when it happened; 'benchlab' for itself.")
    address = models.GenericIPAddressField(null=True, blank=True, help_text="Where the request came from.")
    action = models.CharField(max_length=30, choices=AuditAction.choices, db_index=True)
    object_type = models.CharField(max_length=50, help_text="e.g. run, host, device, user")
    object_id = models.CharField(max_length=50, blank=True)
    object_repr = models.CharField("object", max_length=300)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name}: {self.get_action_display()} {self.object_repr}"
