"""The regression watch's stored change points (runs.watch.services.detect writes them): what was
found in a series, as it was found, and what people made of it (triage: acknowledged, expected
with a note, or open again).

A change point is named for good by its series, its metric and the first round after it (that
round's campaign, or its run outside campaigns): detecting again finds the same one and updates
its numbers, never its triage. One a later detection no longer finds is marked gone (gone_at),
never deleted, and found again if a detection finds it once more."""

from django.conf import settings
from django.db import models
from django.utils import timezone

NOTE_MAX = 500  # a triage note: a line or two ("firmware 2.1 applied on lab1"), not a report


class ChangePointState(models.TextChoices):
    OPEN = "open", "open"
    ACKNOWLEDGED = "acknowledged", "acknowledged"
    EXPECTED = "expected", "expected"


class StoredChangePoint(models.Model):
    series_key = models.CharField(max_length=16, db_index=True)
    metric = models.CharField(max_length=40)  # runs.compare.metrics.METRICS' key
    round_ref = models.CharField(
        max_length=24, help_text='The first round after the change: "c12" (campaign 12), "r345" (run 345).'
    )
    title = models.CharField(max_length=500, help_text="The series' label when it was detected.")
    # As detected (runs.watch.changepoints.ChangePoint), updated when detected again.
    before_mean = models.FloatField()
    after_mean = models.FloatField()
    change = models.FloatField(help_text="after / before - 1")
    change_low = models.FloatField(null=True, blank=True)  # None: Fieller's interval is unbounded
    change_high = models.FloatField(null=True, blank=True)
    p = models.FloatField()
    rounds_before = models.PositiveIntegerField()
    rounds_after = models.PositiveIntegerField()
    round_before = models.PositiveIntegerField(help_text="The last round before the change (its number in the series).")
    round_after = models.PositiveIntegerField()
    drift = models.TextField(blank=True, help_text="What changed on the hosts and devices near it, a line each.")
    comparison_url = models.CharField(max_length=2000, help_text="/compare/ with the rounds before and after.")
    detected_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(default=timezone.now)
    # When a detection of its series first no longer found it (more rounds moved it, or it was
    # noise); None while it is found. Cleared when found again; the row and its triage are kept.
    gone_at = models.DateTimeField(null=True, blank=True)
    # Triage.
    state = models.CharField(max_length=12, choices=ChangePointState.choices, default=ChangePointState.OPEN)
    note = models.CharField(max_length=NOTE_MAX, blank=True)
    triaged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    triaged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-detected_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["series_key", "metric", "round_ref"], name="change_point_identity")
        ]
        indexes = [models.Index(fields=["state", "-detected_at"])]

    def __str__(self) -> str:
        return f"change point {self.identity}"

    @property
    def identity(self) -> str:
        return f"{self.series_key}:{self.metric}:{self.round_ref}"
