"""The worker's side of a running fio baseline: fio's lines, its process and the clock turned
into the baseline's record and live events, and a cancel turned into stopping fio by its PID.

fio runs its jobs one after another in one process and reports only at its end (the lab
layer asks for JSON, not its progress lines), so which job runs now is told by the clock:
each job takes its ramp plus its runtime (fio_plan: --time_based). The page says so.
"""

import time

from django.utils import timezone

from runs.common.db_retry import with_database_retry
from runs.jobs.observer import JobObserver
from runs.jobs.progress import eta_seconds
from runs.lab.fio.plan import FioSettings
from runs.lab.transport.process import Detached
from runs.models import BaselineState, DeviceBaseline

LOG_LINES = 200


class BaselineObserver(JobObserver):
    """run_fio's callbacks and the clock for one baseline (the log's tail, the cancel and
    stopping fio by its PID: runs.jobs.observer)."""

    def __init__(self, baseline: DeviceBaseline, settings: FioSettings) -> None:
        super().__init__(baseline, LOG_LINES)
        self.baseline = baseline
        self.jobs = [job.name for job in settings.job_list()]
        self.job_seconds = settings.runtime_s + settings.ramp_s
        self.percent: float | None = None
        self.current_job = ""
        self._began: float | None = None  # set once fio has started: the clock starts then

    # ---- run_fio's callbacks ----

    def started(self, process: Detached, on: str | None = None) -> None:
        self._began = time.monotonic()
        self.line(f"fio started (PID {process.pid}): {len(self.jobs)} job{'s' if len(self.jobs) != 1 else ''}")
        super().started(process, on)

    def line(self, text: str) -> None:
        self.keep(text)
        self.publish("log", {"line": text})

    # ---- the clock (a thread of its own, jobs.heartbeat.beating) ----

    def tick(self) -> None:
        """Which job runs now by the clock: a step event when it changes, progress every tick."""
        if self._began is None or not self.jobs:
            return
        elapsed = time.monotonic() - self._began
        index = min(len(self.jobs) - 1, int(elapsed // self.job_seconds))
        total = len(self.jobs) * self.job_seconds
        self.percent = min(99.0, 100.0 * elapsed / total)
        job = self.jobs[index]
        pk = self.baseline.pk
        if job != self.current_job:
            self.current_job = job
            at = timezone.now().isoformat()
            data = {"step": job, "label": job, "index": index + 1, "of": len(self.jobs), "at": at}
            running = DeviceBaseline.objects.filter(pk=pk, state=BaselineState.RUNNING)
            with_database_retry(lambda: running.update(step=job), f"baseline {pk}: {job}")
            self.publish("step", data)
        eta = eta_seconds(elapsed, self.percent)
        self.publish("progress", {"percent": round(self.percent, 1), "eta_s": eta, "step": job})
