"""What the worker's observer of every kind of job does alike: it keeps the log's last lines,
publishes the job's live events, notices a cancel, and stops the detached command that runs on
a host now (once).

Each kind adds what its work reports: a run's steps, samples and transitions
(bench.services.observer), a build's steps and make's progress (builds.services.observer), a
baseline's clock (baselines.services.observer). Three threads meet here: the worker's, the
heartbeat's (which reads the tail, jobs.heartbeat) and CancelWatch's (which calls
`cancel_now`, jobs.cancel_watch); the lock keeps the tail and the processes whole.
"""

import threading
from collections import deque
from typing import Any

from django.db import models

from runs.common.db_retry import with_database_retry
from runs.inventory.services.connect import host_connected
from runs.jobs import live
from runs.jobs.kinds import KINDS, JobKind, kind_of
from runs.lab.transport.process import Detached, cancel
from runs.models import Host


def cancel_requested(kind: JobKind | str, job_id: int) -> bool:
    """Has somebody asked the job to stop (or ended it while its worker was starting it)?"""
    kind = KINDS[kind] if isinstance(kind, str) else kind
    rows = kind.model._default_manager.values_list("cancel_requested", "state")
    requested, state = rows.get(pk=job_id)
    return requested or state in kind.ended_states


class JobObserver:
    """The part of a job's observer every kind shares; `job` is its row (a Run, a PgBuild, a
    DeviceBaseline)."""

    def __init__(self, job: models.Model, log_lines: int) -> None:
        self.job = job
        self.kind = kind_of(job)
        self.cancelled = False
        # The detached commands running now, by the client host they run on (None: the job's own
        # host): what a cancel stops. Several only while a run's client hosts run pgbench.
        self.processes: dict[str | None, Detached] = {}
        self._tail: deque[str] = deque(maxlen=log_lines)
        self._lock = threading.Lock()
        self._cancel_sent = False

    def publish(self, event: str, data: dict[str, Any]) -> str:
        """An event on the job's live stream (runs.jobs.live.publish_job)."""
        return live.publish_job(self.kind.name, self.job.pk, event, data)

    def keep(self, line: str) -> None:
        """Keep a line in the log's tail (stored with the job and in a failure's output)."""
        with self._lock:
            self._tail.append(line)

    def tail_lines(self) -> list[str]:
        with self._lock:
            return list(self._tail)

    def log_text(self) -> str:
        return "\n".join(self.tail_lines())

    def check_cancel(self) -> bool:
        """Has a cancel been asked for (or the job ended from outside while its worker was
        starting it)? A read, retried through a restart of benchlab's database like the writes."""
        if not self.cancelled:
            self.cancelled = with_database_retry(
                lambda: cancel_requested(self.kind, self.job.pk), f"{self.kind.name} {self.job.pk}: cancelled?"
            )
        return self.cancelled

    def started(self, process: Detached, on: str | None = None) -> None:
        """A detached command started (on client host `on`; None: the job's own host): what a
        cancel stops from now on. Another client host's command of the same name runs on beside
        it; anything else has ended."""
        with self._lock:
            running: dict[str | None, Detached] = {on: process}
            if on is not None:
                running |= {host: p for host, p in self.processes.items() if p.name == process.name and host}
            self.processes = running
            self._cancel_sent = False
        if self.cancelled:  # the cancel came while it was being started
            self._stop_process()

    def cancel_now(self) -> None:
        """A cancel was asked for (called by CancelWatch, from its thread): stop the detached
        command that runs now, if any; the work stops at its next check."""
        self.cancelled = True
        self.publish("log", {"line": f"stopping: the {self.kind.name} was cancelled"})
        self._stop_process()

    def host_of(self, on: str | None) -> Host:
        """The host a command started `on` runs on (a run's client hosts: bench.services.observer)."""
        host: Host = self.job.host  # type: ignore[attr-defined]  # a build's or a baseline's one host
        return host

    def _stop_process(self) -> None:
        with self._lock:
            if not self.processes or self._cancel_sent:
                return
            self._cancel_sent, processes = True, dict(self.processes)
        for on, process in processes.items():
            with host_connected(self.host_of(on)) as connection:
                cancel(connection, process)
