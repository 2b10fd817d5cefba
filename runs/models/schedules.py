"""Campaigns repeated on a schedule: a campaign (the template) queued again, round after round, at
the times of a crontab that Celery beat reads from the database (django_celery_beat's PeriodicTask).

Each firing is recorded (ScheduleRound), whether it queued a round, skipped one because the previous
round still runs, or was refused; a round queued is a campaign of its own, linked back by
Campaign.schedule and Campaign.schedule_round (1, 2, …), so its runs can be charted round by round.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from runs.models.campaigns import Campaign


class RoundOutcome(models.TextChoices):
    QUEUED = "queued", "queued"
    SKIPPED = "skipped", "skipped"
    REFUSED = "refused", "refused"
    FAILED = "failed", "failed"


class CampaignSchedule(models.Model):
    # The template: its plan is expanded again at each round, against the inventory of that day.
    # PROTECT: a campaign that is repeated is not deleted from under its schedule.
    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="schedules")
    # Beat's own row (its crontab, enabled mirrored): written only by runs.schedules.services.
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", on_delete=models.PROTECT, related_name="campaign_schedule"
    )
    name = models.CharField(max_length=150)
    enabled = models.BooleanField(default=True, help_text="Off: paused, no round is queued.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="campaign_schedules"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The last firing's outcome, kept here so lists need no join (ScheduleRound has them all).
    last_outcome = models.CharField(max_length=10, choices=RoundOutcome.choices, blank=True)
    last_message = models.TextField(blank=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"schedule {self.pk}: {self.name}"


class ScheduleRound(models.Model):
    """One firing of a schedule (by beat, or "Run a round now") and what came of it."""

    schedule = models.ForeignKey(CampaignSchedule, on_delete=models.CASCADE, related_name="firings")
    at = models.DateTimeField(default=timezone.now, db_index=True)
    outcome = models.CharField(max_length=10, choices=RoundOutcome.choices)
    message = models.TextField(blank=True, help_text="Why it was skipped, refused or failed.")
    number = models.PositiveIntegerField(null=True, blank=True, help_text="The round queued, or the one it waited for.")
    campaign = models.OneToOneField(
        Campaign, on_delete=models.SET_NULL, null=True, blank=True, related_name="schedule_firing"
    )
    # None: beat fired it; else who pressed "Run a round now".
    fired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.at:%Y-%m-%d %H:%M}: {self.outcome}"
