"""Who hears of a schedule's news (ScheduleSubscriber) and what is to be told (Notification, an
outbox: written in the transaction of what caused it, delivered by its own Celery task, retried
with backoff; runs.notify)."""

from urllib.parse import urlsplit

from django.db import models
from django.utils import timezone

from runs.models.schedules import CampaignSchedule


class ScheduleSubscriber(models.Model):
    schedule = models.ForeignKey(CampaignSchedule, on_delete=models.CASCADE, related_name="subscribers")
    email = models.EmailField(blank=True)
    webhook_url = models.URLField(max_length=500, blank=True)
    # Standard Webhooks' secret ("whsec_" + base64 of 24 random bytes): shown once when made; the
    # receiver checks each POST's signature with it.
    webhook_secret = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        """What the audit and the admin say of it: the webhook masked (url_masked)."""
        return " and ".join(part for part in (self.email, self.webhook_masked) if part) or f"subscriber {self.pk}"

    @property
    def webhook_masked(self) -> str:
        return url_masked(self.webhook_url) if self.webhook_url else ""


def url_masked(url: str) -> str:
    """ "https://hooks.slack.com/…": a webhook's scheme and host, for those who may not change its
    schedule. A webhook URL is often a bearer secret (Slack's, Teams', a token in its path or query,
    a user and password before its host): whoever has it may post to the receiver as benchlab."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(a webhook)"
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address, as it is written in a URL
    return f"{parts.scheme}://{host}{port}/…"


class NotificationEvent(models.TextChoices):
    CHANGE_POINT = "change_point", "change point found"
    ROUND_MOVED = "round_moved", "round moved beyond noise"


class Channel(models.TextChoices):
    EMAIL = "email", "email"
    WEBHOOK = "webhook", "webhook"


class Notification(models.Model):
    """One message to one target. Its id is the webhook's `webhook-id`: the same on every attempt,
    so a receiver can drop a second delivery."""

    subscriber = models.ForeignKey(ScheduleSubscriber, on_delete=models.CASCADE, related_name="notifications")
    event = models.CharField(max_length=20, choices=NotificationEvent.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    target = models.CharField(max_length=500, help_text="The address or URL when it was written.")
    payload = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)  # None: delivered or given up
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_event_display()} to {self.target_masked}"

    @property
    def target_masked(self) -> str:
        """The address, or the webhook's URL masked (url_masked)."""
        return url_masked(self.target) if self.channel == Channel.WEBHOOK else self.target

    @property
    def message_id(self) -> str:
        return f"msg_benchlab_{self.pk}"
