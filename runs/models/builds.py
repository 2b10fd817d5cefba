"""PostgreSQL builds: a PostgreSQL compiled on a lab host with chosen page sizes and configure
flags, installed into a prefix of its own, and registered as a PgInstall once verified.

A build is a job like a run: queued, it waits its turn on its host (one job per host), runs on a
worker that stamps its heartbeat, can be cancelled, and ends done, failed or cancelled. What it
was asked is one column per option, as the lab layer's BuildOptions (runs/lab/pg_build_options);
what the finished build reports about itself (the verified facts) is stored apart, so a page can
show both. The options' cache key names the prefix on the host: asking again for the same
options on the same host reuses the build (builds.services.builds).
"""

import itertools
import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from runs.models.inventory import Host, PgInstall
from runs.models.job_keys import host_job_key


class BuildState(models.TextChoices):
    QUEUED = "queued", "queued"
    BUILDING = "building", "building"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"
    REMOVED = "removed", "removed"  # was done; its prefix has been removed from the host


# A build of these states holds its key on its host: a second request for the same options gets it.
LIVE_BUILD_STATES = [BuildState.QUEUED, BuildState.BUILDING, BuildState.DONE]
ENDED_BUILD_STATES = [BuildState.DONE, BuildState.FAILED, BuildState.CANCELLED, BuildState.REMOVED]


class BuildSourceKind(models.TextChoices):
    # The values are runs.lab.pgbuild.options.SourceKind's.
    DEBIAN = "debian", "Debian source package"
    TARBALL = "tarball", "source tarball on the host"


class BuildStepName(models.TextChoices):
    # The values are runs.lab.pgbuild.build.BuildStep's, in the order a build goes through them.
    SOURCE = "source", "source"
    CONFIGURE = "configure", "configure"
    MAKE = "make", "make"
    INSTALL = "install", "install"
    VERIFY = "verify", "verification"


class PgBuild(models.Model):
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="pg_builds")

    # --- what was asked (runs.lab.pgbuild.options.BuildOptions, one column per option) ---
    version = models.CharField(max_length=20, help_text="Upstream PostgreSQL version, e.g. 15.20.")
    source_kind = models.CharField(max_length=10, choices=BuildSourceKind.choices)
    package = models.CharField(max_length=100, blank=True, help_text="Debian source package, e.g. postgresql-15.")
    package_version = models.CharField(max_length=100, blank=True, help_text="e.g. 15.20-0+deb12u1.")
    tarball_path = models.CharField(max_length=500, blank=True)
    sha256 = models.CharField("SHA-256", max_length=64, blank=True, help_text="The tarball's published checksum.")
    block_size_kb = models.PositiveSmallIntegerField("block size (kB)", default=8)
    wal_block_size_kb = models.PositiveSmallIntegerField("WAL block size (kB)", default=8)
    segment_size_gb = models.PositiveSmallIntegerField("segment size (GB)", default=1)
    configure_flags = models.JSONField(default=list, blank=True)

    # The cache key of the options and the prefix it names on the host (pg_build_options).
    key = models.CharField(max_length=64, editable=False)
    prefix = models.CharField(max_length=500, editable=False)
    # Names the build's work directory on the host: unique across benchlab installations sharing
    # a lab (a test suite and a real one), unlike the id.
    job_key = models.UUIDField(default=uuid.uuid4, editable=False, unique=True)

    # --- what happened ---
    state = models.CharField(max_length=20, choices=BuildState.choices, default=BuildState.QUEUED, db_index=True)
    step = models.CharField(max_length=20, choices=BuildStepName.choices, blank=True)  # the current (last) step
    progress = models.FloatField(null=True, blank=True, help_text="The current step's estimate, 0–100 %.")
    # Each step entered and when: [[step, ISO time], ...], for the page's step list.
    steps = models.JSONField(default=list, blank=True, editable=False)
    queued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="pg_builds"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    removed_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    failed_step = models.CharField(max_length=20, choices=BuildStepName.choices, blank=True)
    failed_command = models.TextField(blank=True)
    failed_exit_status = models.IntegerField(null=True, blank=True)
    failed_output = models.TextField(blank=True, help_text="The tail of the failed step's output.")
    error = models.TextField(blank=True)
    log = models.TextField(blank=True, help_text="The last lines of the build's output.")
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    reused = models.BooleanField(default=False, help_text="The host had this very build already: nothing compiled.")

    # --- what the finished build says about itself (verified on a throw-away cluster) ---
    built_version = models.CharField(max_length=50, blank=True)
    built_block_size = models.PositiveIntegerField(null=True, blank=True)  # bytes
    built_wal_block_size = models.PositiveIntegerField(null=True, blank=True)  # bytes
    built_segment_size = models.BigIntegerField(null=True, blank=True)  # bytes
    pgbench_version = models.CharField(max_length=200, blank=True)
    source_sha256 = models.CharField(max_length=64, blank=True)
    # Registered only after the verification succeeded, in the same transaction as "done".
    pg_install = models.OneToOneField(
        PgInstall, on_delete=models.SET_NULL, null=True, blank=True, related_name="build", editable=False
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "PostgreSQL build"
        indexes = [models.Index(fields=["host", "state"])]
        constraints = [
            # One live build per options and host: the cache cannot be raced into two builds.
            models.UniqueConstraint(
                fields=["host", "key"], condition=Q(state__in=LIVE_BUILD_STATES), name="pgbuild_one_live_per_key"
            ),
        ]

    def __str__(self) -> str:
        return f"build {self.pk} ({self.get_state_display()})"

    def step_times(self) -> list[tuple[str, datetime | None, datetime | None]]:
        """(step, started, ended) of each step entered, from `steps`. A build recorded before
        steps had ends: a step ended when the next started, the last one when the build finished."""
        times = [[entry[0], parse_datetime(entry[1]), parse_datetime(entry[2]) if len(entry) > 2 else None]
                 for entry in self.steps]  # fmt: skip
        for this, following in itertools.pairwise(times):
            this[2] = this[2] or following[1]
        if times and self.is_finished and times[-1][2] is None:
            times[-1][2] = self.finished_at
        return [(name, started, ended) for name, started, ended in times]

    @property
    def is_finished(self) -> bool:
        return self.state in ENDED_BUILD_STATES

    @property
    def job_name(self) -> str:
        """Names its work directory on the host (pg_build.build_postgres), found again by the sweeper."""
        return host_job_key("build", self.pk, self.job_key)

    @property
    def summary(self) -> str:
        """ "PostgreSQL 15.20, 4 kB pages, 8 kB WAL blocks, 1 GB segments (+ --enable-debug)"."""
        text = (
            f"PostgreSQL {self.version}, {self.block_size_kb} kB pages, {self.wal_block_size_kb} kB WAL blocks, "
            f"{self.segment_size_gb} GB segments"
        )
        return f"{text} ({' '.join(self.configure_flags)})" if self.configure_flags else text

    @property
    def source_text(self) -> str:
        if self.source_kind == BuildSourceKind.DEBIAN:
            return f"Debian source package {self.package} {self.package_version}"
        checked = f", SHA-256 {self.sha256[:12]}…" if self.sha256 else ", no checksum given"
        return f"tarball {self.tarball_path}{checked}"
