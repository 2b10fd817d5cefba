"""Share links: a read-only view of one run, one campaign or one comparison for people without
an account.

Only a SHA-256 of the token is stored (the token itself is shown once, to its owner), so a
copy of the database lets nobody open a shared page. A comparison is stored as what defines it
(its runs and its options), not as a snapshot: the shared page is the same page, minus controls.
"""

from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone


class ShareKind(models.TextChoices):
    RUN = "run", "run"
    CAMPAIGN = "campaign", "campaign"
    COMPARISON = "comparison", "comparison"


class ShareLink(models.Model):
    token_hash = models.CharField(max_length=64, unique=True, editable=False)  # sha256 hex of the token
    kind = models.CharField(max_length=20, choices=ShareKind.choices)
    title = models.CharField(max_length=200, blank=True, help_text="Shown as the shared page's heading.")
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    campaign = models.ForeignKey("runs.Campaign", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    # A comparison: the runs (ids, in the order given) and its options (grouping, baseline, facet).
    run_ids = models.JSONField(default=list, blank=True)
    options = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    views = models.PositiveIntegerField(default=0)
    last_viewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                name="sharelink_target_matches_kind",
                condition=(
                    models.Q(kind="run", run__isnull=False, campaign__isnull=True)
                    | models.Q(kind="campaign", campaign__isnull=False, run__isnull=True)
                    | models.Q(kind="comparison", run__isnull=True, campaign__isnull=True)
                ),
            )
        ]

    def __str__(self) -> str:
        return f"share {self.pk}: {self.get_kind_display()} {self.target_label}"

    @property
    def target_label(self) -> str:
        if self.kind == ShareKind.RUN:
            return f"run {self.run_id}"
        if self.kind == ShareKind.CAMPAIGN:
            return f"campaign {self.campaign_id}"
        return f"comparison of {len(self.run_ids)} runs"

    def is_live(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)
