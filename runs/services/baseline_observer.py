"""The worker's side of a running fio baseline: fio's lines, its process and the clock turned
into the baseline's record and live events, and a cancel turned into stopping fio by its PID.

fio runs its jobs one after another in one process and reports only at its end (the lab
layer asks for JSON, not its progress lines), so which job runs now is told by the clock:
each job takes its ramp plus its runtime (fio_plan: --time_based). The page says so.
"""

import threading
import time
from collections import deque

from django.utils import timezone

from runs.baseline_live import publish_baseline
from runs.lab.fio import fio_cancel
from runs.lab.fio_plan import FioSettings
from runs.lab.pgbench import Detached
from runs.models import BaselineState, DeviceBaseline
from runs.services.build_observer import eta_seconds
from runs.services.db_retry import with_database_retry
from runs.services.lab_access import host_connect

LOG_LINES = 200


def baseline_cancel_requested(baseline_id: int) -> bool:
    """Has somebody asked the baseline to stop (or ended it while its worker was starting it)?"""
    requested, state = DeviceBaseline.objects.values_list("cancel_requested", "state").get(pk=baseline_id)
    return requested or state != BaselineState.RUNNING


class BaselineObserver:
    def __init__(self, baseline: DeviceBaseline, settings: FioSettings) -> None:
        self.baseline = baseline
        self.jobs = [job.name for job in settings.job_list()]
        self.job_seconds = settings.runtime_s + settings.ramp_s
        self.percent: float | None = None
        self.current_job = ""
        self.cancelled = False
        self.process: Detached | None = None  # fio, once started: what a cancel stops
        self._began: float | None = None
        self._tail: deque[str] = deque(maxlen=LOG_LINES)
        self._lock = threading.Lock()  # the clock's and the cancel watch's threads read and stop
        self._cancel_sent = False

    # ---- run_fio's callbacks ----

    def started(self, process: Detached) -> None:
        with self._lock:
            self.process, self._began = process, time.monotonic()
        self.line(f"fio started (PID {process.pid}): {len(self.jobs)} job{'s' if len(self.jobs) != 1 else ''}")
        if self.cancelled:  # the cancel came while it was being started
            self._stop_process()

    def line(self, text: str) -> None:
        with self._lock:
            self._tail.append(text)
        publish_baseline(self.baseline.pk, "log", {"line": text})

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
            publish_baseline(pk, "step", data)
        eta = eta_seconds(elapsed, self.percent)
        publish_baseline(pk, "progress", {"percent": round(self.percent, 1), "eta_s": eta, "step": job})

    # ---- the worker's ----

    def check_cancel(self) -> bool:
        if not self.cancelled:
            self.cancelled = with_database_retry(
                lambda: baseline_cancel_requested(self.baseline.pk), f"baseline {self.baseline.pk}: cancelled?"
            )
        return self.cancelled

    def cancel_now(self) -> None:
        """A cancel was asked for (called by CancelWatch, from its thread): stop fio by its PID."""
        self.cancelled = True
        publish_baseline(self.baseline.pk, "log", {"line": "stopping: the baseline was cancelled"})
        self._stop_process()

    def log_text(self) -> str:
        with self._lock:
            return "\n".join(self._tail)

    def _stop_process(self) -> None:
        with self._lock:
            if self.process is None or self._cancel_sent:
                return
            self._cancel_sent, process = True, self.process
        connection = host_connect(self.baseline.host)
        try:
            fio_cancel(connection, process)
        finally:
            connection.close()
