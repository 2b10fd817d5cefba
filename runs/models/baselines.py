"""Raw device baselines: fio run on one device of one host, a job of its own kind.

Like a PostgreSQL build, a baseline waits its turn on its host (one job per host, in the same
line as runs and builds: jobs.dispatch), runs on a worker that stamps its heartbeat, can be
cancelled, and ends done, failed or cancelled. What was asked is the lab layer's FioSettings
(runs/lab/fio_plan), one column per setting; where fio wrote (the raw device, or a file on a
directory device's filesystem) is chosen on the host by runs.lab.fio.run.fio_target and recorded
with its description, since a file's figures include the filesystem.

`results` holds the parsed figures, one entry per fio job that ran, by job name (PostgreSQL's
jsonb keeps no key order: `jobs` gives the order they ran in):

    {"seq-read": {"rw": "read", "bs": "1M", "iodepth": 8, "runtime_ms": 30000,
                  "read": {"bw_mb_s": 512.3, "iops": 488.6, "lat_p50_ms": 16.2, "lat_p99_ms": 20.1,
                           "lat_mean_ms": 16.4, "io_bytes": 16106127360, "runtime_ms": 30000},
                  "write": null},
     "rand-read-qd1": {...}, ...}

(units as parse_fio's: MB/s = 10^6 bytes/s, latency in ms; a direction a job did not use is
null). fio's own JSON is kept whole in `fio_json`, downloadable from the baseline's page.
"""

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from runs.models.inventory import Device, Host
from runs.models.job_keys import host_job_key


class BaselineState(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


class BaselineRole(models.TextChoices):
    """What a baseline is for. A campaign's canaries (Campaign.fio_canary) are short baselines
    of each of its devices, one before its runs and one after, compared by runs.method.canary."""

    BASELINE = "baseline", "baseline"
    CANARY_BEFORE = "canary-before", "canary before the campaign"
    CANARY_AFTER = "canary-after", "canary after the campaign"


ENDED_BASELINE_STATES = [BaselineState.DONE, BaselineState.FAILED, BaselineState.CANCELLED]


class TargetMode(models.TextChoices):
    # The values are runs.lab.fio.run.FioTarget.mode's.
    RAW = "raw", "raw device"
    FILE = "file", "file on a filesystem"


# The main figures: (key, fio job, direction, figure, label, unit). Pages, the chart and the
# comparison table read results through this one list.
FIGURES: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("seq_read_mb_s", "seq-read", "read", "bw_mb_s", "sequential read", "MB/s"),
    ("seq_write_mb_s", "seq-write", "write", "bw_mb_s", "sequential write", "MB/s"),
    ("rand_read_iops_qd1", "rand-read-qd1", "read", "iops", "random 4k read QD1", "IOPS"),
    ("rand_read_iops_qd32", "rand-read-qd32", "read", "iops", "random 4k read QD32", "IOPS"),
    ("rand_write_iops_qd1", "rand-write-qd1", "write", "iops", "random 4k write QD1", "IOPS"),
    ("rand_write_iops_qd32", "rand-write-qd32", "write", "iops", "random 4k write QD32", "IOPS"),
    ("read_lat_p50_ms", "rand-read-qd1", "read", "lat_p50_ms", "4k read latency p50 (QD1)", "ms"),
    ("read_lat_p99_ms", "rand-read-qd1", "read", "lat_p99_ms", "4k read latency p99 (QD1)", "ms"),
    ("read_lat_mean_ms", "rand-read-qd1", "read", "lat_mean_ms", "4k read latency mean (QD1)", "ms"),
    ("write_lat_p50_ms", "rand-write-qd1", "write", "lat_p50_ms", "4k write latency p50 (QD1)", "ms"),
    ("write_lat_p99_ms", "rand-write-qd1", "write", "lat_p99_ms", "4k write latency p99 (QD1)", "ms"),
)

# The vendor's claims on Device beside the measured figure each is compared with: vendors quote
# random IOPS at a deep queue, and an "average access time" is a mean at one request at a time.
CLAIMS: tuple[tuple[str, str], ...] = (
    ("claimed_seq_read_mb_s", "seq_read_mb_s"),
    ("claimed_seq_write_mb_s", "seq_write_mb_s"),
    ("claimed_rand_read_iops", "rand_read_iops_qd32"),
    ("claimed_rand_write_iops", "rand_write_iops_qd32"),
    ("claimed_latency_ms", "read_lat_mean_ms"),
)


class DeviceBaseline(models.Model):
    device = models.ForeignKey(Device, on_delete=models.PROTECT, related_name="baselines")
    # The device's host, kept on the row: the queue and the host's claim work by host.
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="baselines", editable=False)
    campaign = models.ForeignKey(
        "runs.Campaign", on_delete=models.SET_NULL, null=True, blank=True, related_name="baselines"
    )

    role = models.CharField(max_length=20, choices=BaselineRole.choices, default=BaselineRole.BASELINE)

    # --- what was asked (runs.lab.fio.plan.FioSettings, one column per setting) ---
    size_bytes = models.BigIntegerField(help_text="The region of the device (or the file's size) fio uses.")
    runtime_s = models.PositiveIntegerField(help_text="Measured seconds per fio job.")
    ramp_s = models.PositiveIntegerField(help_text="Seconds per job before measuring starts.")
    jobs = models.JSONField(help_text="The fio jobs chosen, in standard order.")
    ioengine = models.CharField(max_length=20, default="libaio")
    # Names its directories on the host: unique across benchlab installations sharing a lab.
    job_key = models.UUIDField(default=uuid.uuid4, editable=False, unique=True)

    # --- where fio wrote (runs.lab.fio.run.fio_target, chosen on the host) ---
    target_mode = models.CharField(max_length=10, choices=TargetMode.choices, blank=True)
    target_description = models.CharField(max_length=1000, blank=True)

    # --- what happened ---
    state = models.CharField(max_length=20, choices=BaselineState.choices, default=BaselineState.QUEUED, db_index=True)
    step = models.CharField(max_length=40, blank=True, help_text="The fio job running now (by the clock).")
    progress = models.FloatField(null=True, blank=True, help_text="Of all the jobs, 0–100 % (by the clock).")
    queued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="baselines"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    failed_command = models.TextField(blank=True)
    failed_exit_status = models.IntegerField(null=True, blank=True)
    failed_output = models.TextField(blank=True, help_text="The tail of fio's output when it failed.")
    log = models.TextField(blank=True, help_text="What fio and benchlab said, last lines.")
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    # --- results ---
    command = models.TextField(blank=True, help_text="fio's command line, exactly as run on the host.")
    fio_version = models.CharField(max_length=100, blank=True)
    results = models.JSONField(default=dict, blank=True, help_text="Per fio job (see the module's docstring).")
    fio_json = models.TextField(blank=True, help_text="fio's JSON output, whole.")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "device baseline (fio)"
        indexes = [models.Index(fields=["device", "state"]), models.Index(fields=["host", "state"])]

    def __str__(self) -> str:
        return f"baseline {self.pk} ({self.get_state_display()})"

    @property
    def is_finished(self) -> bool:
        return self.state in ENDED_BASELINE_STATES

    @property
    def run_key(self) -> str:
        """Names its directories on the host (runs.lab.fio.run.run_fio's run_key)."""
        return host_job_key("fio", self.pk, self.job_key)

    @property
    def summary(self) -> str:
        """ "6 fio jobs, 1 GiB, 30 s each (+2 s ramp), libaio"."""
        size = f"{self.size_bytes / 2**30:g} GiB" if self.size_bytes >= 2**30 else f"{self.size_bytes // 2**20} MiB"
        jobs = len(self.jobs)
        each = f"{self.runtime_s} s each (+{self.ramp_s} s ramp)"
        return f"{jobs} fio job{'s' if jobs != 1 else ''}, {size}, {each}, {self.ioengine}"

    def figure(self, key: str) -> float | None:
        """One of FIGURES by key, or None when its job did not run (or the baseline has no results)."""
        for name, job, direction, figure, _label, _unit in FIGURES:
            if name == key:
                measured: Any = (self.results.get(job) or {}).get(direction) or {}
                value = measured.get(figure)
                return float(value) if value is not None else None
        raise KeyError(key)

    @property
    def figures(self) -> dict[str, float | None]:
        return {key: self.figure(key) for key, *_ in FIGURES}
