"""Campaigns: a study as one thing. A base run specification, the variables swept and their
values, and a repetition count expand into configurations (one RunSpec each); the campaign's
runs are those configurations' repetitions, queued interleaved so that drift over hours
favours none of them.
"""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from runs.models.notes import Annotated

MAX_REPETITIONS = 100
MAX_CONFIGURATIONS = 200


class RunOrder(models.TextChoices):
    INTERLEAVED = "interleaved", "interleaved: repetition 1 of every configuration, then 2, …"
    SHUFFLED = "shuffled", "interleaved, shuffled within each round (seed recorded)"


class Campaign(Annotated):
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    preset = models.CharField(max_length=50, blank=True, help_text="The preset that filled the form, if any.")
    # The specification every configuration starts from (RunSpec.as_json()).
    base_spec = models.JSONField()
    # The variables as the user gave them: [{"field": "mount_options", "values": ["noatime", …]}, …].
    variables = models.JSONField(default=list)
    repetitions = models.PositiveIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(MAX_REPETITIONS)]
    )
    order = models.CharField(max_length=20, choices=RunOrder.choices, default=RunOrder.INTERLEAVED)
    seed = models.BigIntegerField(null=True, blank=True, help_text="The shuffle's seed, to reproduce the order.")
    fresh_database = models.BooleanField(
        "fresh database per run",
        default=False,
        help_text="Make the storage and load the database for every run. Off: consecutive runs on a device "
        "that share storage and database configuration reuse them.",
    )
    fio_baseline = models.BooleanField(
        "fio baseline per device first",
        default=False,
        help_text="Measure each device of the campaign with fio (raw device baseline) before its runs.",
    )
    # Not fio_baseline run twice: that is 6 jobs of 32 s per device, made to compare devices;
    # a canary is a few seconds of QD1 random I/O, made to notice that a device changed.
    fio_canary = models.BooleanField(
        "fio canary before and after",
        default=False,
        help_text="A short fio run on each device before and after the campaign (about 10 s each): "
        "a device whose figures changed between the two is flagged on the campaign.",
    )
    # Adaptive repetition: after the first `repetitions` rounds, configurations whose 95 %
    # confidence interval of the mean steady-state tps is wider than ±target_ci_pct % of the
    # mean get another round, until it is not or max_repetitions is reached.
    target_ci_pct = models.FloatField(
        "target CI (± % of the mean)",
        null=True,
        blank=True,
        validators=[MinValueValidator(0.1), MaxValueValidator(50)],
        help_text="Adaptive: repeat a configuration until the 95 % CI of its mean steady-state tps is within "
        "± this % of the mean. Empty: exactly the repetitions above.",
    )
    max_repetitions = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(2), MaxValueValidator(MAX_REPETITIONS)],
        help_text="Adaptive: never more repetitions than this per configuration.",
    )
    # Combinations the expansion refused, with why: [{"label": …, "errors": {field: [message]}}].
    rejected = models.JSONField(default=list, blank=True)
    baseline_index = models.PositiveIntegerField(default=0, help_text="The configuration others are compared with.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="campaigns"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # A round of a schedule (runs.models.schedules): which, and its number (1, 2, …). A deleted
    # schedule leaves its rounds as campaigns of their own.
    schedule = models.ForeignKey(
        "runs.CampaignSchedule", on_delete=models.SET_NULL, null=True, blank=True, related_name="rounds"
    )
    schedule_round = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "schedule_round"], name="campaign_unique_schedule_round")
        ]

    def __str__(self) -> str:
        return f"campaign {self.pk}: {self.name}"


class CampaignConfiguration(models.Model):
    """One cell of the campaign's matrix: the base specification with the variables' values."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="configurations")
    index = models.PositiveIntegerField()  # its place in the matrix, from 0
    label = models.CharField(max_length=500)  # the varied values, e.g. "lab1:ram · noatime"
    values = models.JSONField(default=dict)  # {variable label: value as shown}
    spec = models.JSONField()  # RunSpec.as_json()

    class Meta:
        ordering = ["campaign", "index"]
        constraints = [models.UniqueConstraint(fields=["campaign", "index"], name="campaignconfiguration_unique_index")]

    def __str__(self) -> str:
        return f"{self.campaign_id}#{self.index} {self.label}"
