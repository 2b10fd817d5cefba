"""The worker's side of a running PostgreSQL build: the lab layer's steps, progress and output
lines turned into the build's record and live events, and a cancel turned into stopping what
runs on the host now.

Steps are written at once, each with its start and (once the next starts, or the build ends)
its end: PgBuild.steps holds [name, started, ended] ISO times, [name, started] for the step in
progress (and for every step of a build recorded before ends were). Progress and the log's last
lines go with the heartbeat (a write per line of make's output would be thousands), and every
line goes to the page live.
"""

import threading
import time
from collections import deque
from datetime import datetime
from typing import Any

from django.utils import timezone

from runs import live
from runs.lab.pg_build import BuildStep
from runs.lab.pgbench import Detached, cancel
from runs.models import BuildState, BuildStepName, PgBuild
from runs.services.db_retry import with_database_retry
from runs.services.lab_access import host_connect

LOG_LINES = 300  # kept with the build (PgBuild.log), and the failure's output when the lab layer has none
PROGRESS_EVENT_EVERY_S = 1.0  # make reports often; the page needs a point a second at most


class BuildCancelled(Exception):
    pass


def build_cancel_requested(build_id: int) -> bool:
    """Has somebody asked the build to stop (or ended it while its worker was starting it)?"""
    requested, state = PgBuild.objects.values_list("cancel_requested", "state").get(pk=build_id)
    return requested or state != BuildState.BUILDING


class BuildJobObserver:
    """runs.lab.pg_build.BuildObserver for one build."""

    def __init__(self, build: PgBuild) -> None:
        self.build = build
        self.current_step: str = ""  # where a failure happened ("" before the first step)
        self.percent: float | None = None
        self.cancelled = False
        self.process: Detached | None = None  # the detached command running now: what a cancel stops
        self._tail: deque[str] = deque(maxlen=LOG_LINES)
        self._lock = threading.Lock()  # the heartbeat's thread reads the tail; CancelWatch's stops the process
        self._cancel_sent = False
        self._steps: list[list[str]] = []
        self._step_began = time.monotonic()
        self._progress_sent = 0.0

    # ---- BuildObserver ----

    def step(self, step: BuildStep) -> None:
        if self.cancelled or self.check_cancel():
            raise BuildCancelled()  # the build does not even enter the step
        name = BuildStepName(str(step))
        at = timezone.now()
        self.current_step, self.percent, self._step_began = name.value, None, time.monotonic()
        steps = self.steps_ended(at)  # the step before ends as this one starts
        self._steps.append([name.value, at.isoformat()])
        steps.append([name.value, at.isoformat()])
        self.line(f"== {name.label} ==")  # which step the lines after it belong to
        building = PgBuild.objects.filter(pk=self.build.pk, state=BuildState.BUILDING)
        with_database_retry(
            lambda: building.update(step=name.value, progress=None, steps=steps), f"build {self.build.pk}: {name}"
        )
        live.publish_build(self.build.pk, "step", {"step": name.value, "label": name.label, "at": at.isoformat()})

    def steps_ended(self, at: datetime) -> list[list[str]]:
        """The steps so far, [name, started, ended] each (PgBuild.steps), the current one ended
        at `at`: when the next starts, or when the build ends (its worker records them then)."""
        if self._steps and len(self._steps[-1]) == 2:
            self._steps[-1].append(at.isoformat())
        return [list(entry) for entry in self._steps]

    def line(self, text: str) -> None:
        with self._lock:
            self._tail.append(text)
        live.publish_build(self.build.pk, "log", {"line": text})

    def progress(self, percent: float) -> None:
        self.percent = max(0.0, min(100.0, float(percent)))
        now = time.monotonic()
        if now - self._progress_sent < PROGRESS_EVENT_EVERY_S and self.percent < 100.0:
            return
        self._progress_sent = now
        data: dict[str, Any] = {"step": self.current_step, "percent": round(self.percent, 1)}
        data["eta_s"] = eta_seconds(now - self._step_began, self.percent)
        live.publish_build(self.build.pk, "progress", data)

    def started(self, process: Detached) -> None:
        with self._lock:
            self.process = process
        if self.cancelled:  # the cancel came while it was being started
            self._stop_process()

    # ---- the worker's ----

    def check_cancel(self) -> bool:
        """Has a cancel been asked for? A read, retried through a restart of benchlab's database."""
        if not self.cancelled:
            self.cancelled = with_database_retry(
                lambda: build_cancel_requested(self.build.pk), f"build {self.build.pk}: cancelled?"
            )
        return self.cancelled

    def cancel_now(self) -> None:
        """A cancel was asked for (called by CancelWatch, from its thread): stop the detached
        command that runs now, if any; the steps stop at their next check."""
        self.cancelled = True
        live.publish_build(self.build.pk, "log", {"line": "stopping: the build was cancelled"})
        self._stop_process()

    def log_text(self) -> str:
        with self._lock:
            return "\n".join(self._tail)

    def log_tail(self, lines: int) -> str:
        with self._lock:
            return "\n".join(list(self._tail)[-lines:])

    def _stop_process(self) -> None:
        with self._lock:
            if self.process is None or self._cancel_sent:
                return
            self._cancel_sent, process = True, self.process
        connection = host_connect(self.build.host)
        try:
            cancel(connection, process)
        finally:
            connection.close()


def eta_seconds(elapsed_s: float, percent: float | None) -> int | None:
    """How long the step still takes at the pace it has had so far; None until it has moved."""
    if percent is None or percent <= 0.5 or elapsed_s <= 0:
        return None
    return max(0, round(elapsed_s * (100.0 - percent) / percent))
