"""The worker's side of a running PostgreSQL build: the lab layer's steps, progress and output
lines turned into the build's record and live events, and a cancel turned into stopping what
runs on the host now.

Steps are written at once, each with its start and (once the next starts, or the build ends)
its end: PgBuild.steps holds [name, started, ended] ISO times, [name, started] for the step in
progress (and for every step of a build recorded before ends were). Progress and the log's last
lines go with the heartbeat (a write per line of make's output would be thousands), and every
line goes to the page live.
"""

import time
from datetime import datetime
from typing import Any

from django.utils import timezone

from runs.common.db_retry import with_database_retry
from runs.jobs.observer import JobObserver
from runs.jobs.progress import eta_seconds
from runs.lab.pgbuild.build import BuildStep
from runs.models import BuildState, BuildStepName, PgBuild

LOG_LINES = 300  # kept with the build (PgBuild.log), and the failure's output when the lab layer has none
PROGRESS_EVENT_EVERY_S = 1.0  # make reports often; the page needs a point a second at most


class BuildCancelled(Exception):
    pass


class BuildJobObserver(JobObserver):
    """runs.lab.pgbuild.build.BuildObserver for one build (the log's tail, the cancel and stopping
    what runs: runs.jobs.observer)."""

    def __init__(self, build: PgBuild) -> None:
        super().__init__(build, LOG_LINES)
        self.build = build
        self.current_step: str = ""  # where a failure happened ("" before the first step)
        self.percent: float | None = None
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
        self.publish("step", {"step": name.value, "label": name.label, "at": at.isoformat()})

    def steps_ended(self, at: datetime) -> list[list[str]]:
        """The steps so far, [name, started, ended] each (PgBuild.steps), the current one ended
        at `at`: when the next starts, or when the build ends (its worker records them then)."""
        if self._steps and len(self._steps[-1]) == 2:
            self._steps[-1].append(at.isoformat())
        return [list(entry) for entry in self._steps]

    def line(self, text: str) -> None:
        self.keep(text)
        self.publish("log", {"line": text})

    def progress(self, percent: float) -> None:
        self.percent = max(0.0, min(100.0, float(percent)))
        now = time.monotonic()
        if now - self._progress_sent < PROGRESS_EVENT_EVERY_S and self.percent < 100.0:
            return
        self._progress_sent = now
        data: dict[str, Any] = {"step": self.current_step, "percent": round(self.percent, 1)}
        data["eta_s"] = eta_seconds(now - self._step_began, self.percent)
        self.publish("progress", data)

    # ---- the worker's ----

    def log_tail(self, lines: int) -> str:
        return "\n".join(self.tail_lines()[-lines:])
