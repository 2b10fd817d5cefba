"""Doing one job on a worker, written once for every kind: the guard against a second delivery of
its task, the start, the heartbeat while the work runs, and the end, whatever happened.

A kind of job subclasses `Execution` with what is its own: how its row is read, why it may be
refused after it was queued, how its state moves, the work itself and what its heartbeat and its
end store (bench.services.execute for a run, builds.services.execute for a PostgreSQL build,
baselines.services.execute for a fio baseline). `job_execute` does the rest:

- a job that has ended says its state; one a worker has started is "running" while its heartbeat
  is fresh, else "abandoned" (the worker died: the task's sweep ends it); one that does not hold
  its hosts is "waiting" (the dispatcher sends it again when its turn comes);
- one refused since it was queued fails, its hosts released;
- otherwise its start is stamped (a conditional UPDATE: a cancel that came first wins) and
  `drive_to_end` does the work with the heartbeat beating, then releases the hosts, makes the
  final transition, calls what follows the job's end (jobs.hooks), and dispatches the next in
  line, in that order: once a job shows as ended, its hosts are free for the next one.
"""

import logging
import socket
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

from django.db import models
from django.utils import timezone

from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.jobs.heartbeat import has_live_worker, job_heartbeat
from runs.jobs.hooks import job_ended
from runs.jobs.host_reach import NOT_STARTED, HostAway
from runs.jobs.kinds import JobKind
from runs.lab.errors import CommandFailed, tail
from runs.models import Host

log = logging.getLogger(__name__)

Ending = tuple[str, dict[str, Any]]  # the state a job ends in and the fields that go with it
J = TypeVar("J", bound=models.Model)
S = TypeVar("S", bound=str)  # a kind's states (RunState, BuildState, ...)


class Execution(ABC, Generic[J]):
    """One job done by this worker; its kind says what is its own by overriding what follows."""

    kind: ClassVar[JobKind]
    # The state its worker's start moves it to; None for a run, whose state moves with its steps.
    started_state: ClassVar[str | None]
    failed_state: ClassVar[str]

    def __init__(self, job: J) -> None:
        self.job = job

    @classmethod
    @abstractmethod
    def load(cls, job_id: int) -> J:
        """The job with what doing it reads."""

    @property
    def hosts(self) -> Sequence[Host]:
        """The hosts it needs (and the dispatcher claims for it): the one in its `host` unless the
        kind says otherwise (a run's server and client hosts)."""
        job: Any = self.job
        return [job.host]

    @abstractmethod
    def transition(self, state: str, from_state: str | None = None, **fields: Any) -> bool:
        """The kind's move to `state` unless it has ended (jobs.transitions.run_transition,
        jobs.transitions.build_transition, ...); False if it did not move."""

    @abstractmethod
    def work(self) -> Ending:
        """What the job is, done on its hosts: how it ends (its hosts are released after)."""

    def refusal(self) -> str | None:
        """Why it may not run after all (forbidden since it was queued), or None."""
        return None

    def start(self, now: datetime, worker: str) -> bool:
        """Stamp this worker's start, moving it out of the queued state, unless it has been
        cancelled meanwhile (a conditional UPDATE); False then."""
        assert self.started_state is not None, "a kind whose start moves no state stamps it itself"
        fields = {"started_at": now, "worker": worker, "heartbeat_at": now}
        return self.transition(self.started_state, from_state=self.kind.queued_state, **fields)

    def heartbeat_fields(self) -> dict[str, Any]:
        """What each heartbeat stores besides its time (read when it beats)."""
        return {}

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        """The job's sign of life while its work runs (jobs.heartbeat)."""
        with job_heartbeat(self.job, self.heartbeat_fields, while_in=self.started_state):
            yield

    def crash_fields(self) -> dict[str, Any]:
        """What a failure of benchlab itself (not of the job's work) records besides its error."""
        return {}

    def end(self, state: str, fields: dict[str, Any]) -> bool:
        """The final transition, with what the kind stores at its end; False if it had ended
        from outside meanwhile."""
        return self.transition(state, **fields)

    def ended(self) -> None:
        """What follows the job's end (jobs.hooks): called here unless the kind's transition to an
        ended state calls it itself."""
        job_ended(self.job)


def job_execute(execution: type[Execution[J]], job_id: int) -> str:
    """Do job `job_id`, whose hosts the dispatcher claimed for it. Returns "waiting" (it does not
    hold its hosts: the dispatcher sends it again when its turn comes), "running" (another worker
    is doing it: look again later), "abandoned" (the worker that started it died: its sweeper
    ends it), or the state it ended in ("queued" again when a host did not answer at its start:
    jobs.host_reach)."""
    doing = execution(execution.load(job_id))
    job: Any = doing.job
    if job.is_finished:
        return job.state
    if job.state != doing.kind.queued_state or job.started_at is not None:
        # The broker handed the task out again. A worker still stamping the heartbeat is doing
        # it; otherwise that worker died, and the lab host may still hold what it made: say so
        # instead of starting over on top of it.
        return "running" if has_live_worker(job) else "abandoned"
    if not _holds_its_hosts(doing):
        return "waiting"
    if refusal := doing.refusal():  # not a wait (a disabled host is one): the inventory changed
        release_hosts(job)
        doing.transition(doing.failed_state, error=refusal)
        return _after_end(doing)
    if not _mark_started(doing):
        return job.state  # cancelled while queued; the cancel gave its hosts to the next in line
    return drive_to_end(doing)


def drive_to_end(doing: Execution[Any]) -> str:
    """Do the job's work with its heartbeat beating, then end it whatever happened: hosts released
    first (once a job shows as ended, its hosts are free for the next one), its final state, then
    what follows its end. Returns that state."""
    job: Any = doing.job
    try:
        with doing.heartbeat():
            state, fields = doing.work()
    except Exception as exc:
        log.exception("%s %s: benchlab failed", doing.kind.name, job.pk)
        state, fields = doing.failed_state, {"error": f"benchlab failed: {exc!r}"} | doing.crash_fields()
    finally:
        release_hosts(job)
    if not doing.end(state, fields):
        job.refresh_from_db(fields=["state"])  # ended meanwhile from outside: cancelled while starting
    return _after_end(doing)


def job_after_end(job: models.Model) -> None:
    """A job has ended: what follows (jobs.hooks), then the next in line starts."""
    job_ended(job)
    queue_dispatch()


def _after_end(doing: Execution[Any]) -> str:
    job: Any = doing.job
    doing.ended()
    queue_dispatch()
    return job.state


def _holds_its_hosts(doing: Execution[Any]) -> bool:
    """Whether the dispatcher has claimed every host of the job for it (a worker is starting it)."""
    return Host.objects.filter(**{doing.kind.holder: doing.job}).count() == len(doing.hosts)


def _mark_started(doing: Execution[Any]) -> bool:
    """Stamp the start unless the job was cancelled meanwhile. From here on a cancel no longer
    releases the job's hosts: this worker does, when the job has stopped."""
    if doing.start(timezone.now(), socket.gethostname()):
        return True
    doing.job.refresh_from_db(fields=["state", "started_at", "worker"])
    return False


def away_ending(away: HostAway, queued: S, failed: S, **fields: Any) -> tuple[S, dict[str, Any]]:
    """A host did not answer at the job's start (jobs.host_reach): queued again as before its
    worker took it (its hosts are released as ever; `fields` say why, where the kind records it),
    or failed once the host has been away longer than its jobs wait."""
    if away.overdue:
        return failed, {"error": away.failure}
    return queued, NOT_STARTED | fields


def command_failed(command: str, exit_status: int | None, output: str, log_tail: str) -> dict[str, Any]:
    """A failed job's fields for the command that failed: its line, exit status and the tail of
    what it printed (`log_tail`, the job's own log, when it printed nothing)."""
    return {"failed_command": command, "failed_exit_status": exit_status, "failed_output": tail(output) or log_tail}


def failure_output(exc: Exception, log_tail: str) -> dict[str, Any]:
    """What a failure shows of its cause: the command for a CommandFailed, else the job's log."""
    if isinstance(exc, CommandFailed):
        return command_failed(exc.command, exc.exit_status, exc.stderr or exc.stdout, log_tail)
    return {"failed_output": log_tail}
