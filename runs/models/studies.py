"""A preset's study that waits for PostgreSQL builds: seed 001 compares page sizes that no
packaged PostgreSQL has, so its preset can queue the missing builds first and the campaign
itself once they are done (campaigns.services.after_builds)."""

from django.conf import settings
from django.db import models


class StudyWaitState(models.TextChoices):
    WAITING = "waiting", "waiting for its builds"
    QUEUED = "queued", "campaign queued"
    FAILED = "failed", "not queued"


class StudyAfterBuilds(models.Model):
    preset = models.CharField(max_length=50)  # a key of runs.campaigns.presets.PRESETS
    host = models.ForeignKey("runs.Host", on_delete=models.CASCADE, related_name="studies_after_builds")
    # The source every page size is built from (runs.lab.pgbuild.sources.HostSource.key), with the same flags.
    source_key = models.CharField(max_length=300, blank=True)
    builds = models.ManyToManyField("runs.PgBuild", related_name="studies_waiting")
    # Those of `builds` this study queued (not found there already): cancelled if it gives up.
    started_builds = models.ManyToManyField("runs.PgBuild", related_name="studies_started", blank=True)
    # Those of `started_builds` it cancelled (or asked to stop) when it gave up.
    cancelled_builds = models.ManyToManyField("runs.PgBuild", related_name="studies_cancelled", blank=True)
    # The campaign form as the user posted it (field name -> values): queued as edited.
    form_data = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=20, choices=StudyWaitState.choices, default=StudyWaitState.WAITING)
    campaign = models.ForeignKey(
        "runs.Campaign", on_delete=models.SET_NULL, null=True, blank=True, related_name="queued_after_builds"
    )
    note = models.TextField(blank=True, help_text="Why it was not queued, in words.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="studies_after_builds"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "study waiting for builds"
        verbose_name_plural = "studies waiting for builds"

    def __str__(self) -> str:
        return f"study {self.pk} ({self.preset} on {self.host_id}): {self.get_state_display()}"
