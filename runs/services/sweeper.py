"""Runs whose worker died: found by their stale heartbeat, finished by another worker or
cleaned up on their hosts and ended.

The worker running a run stamps its heartbeat every few seconds (services.heartbeat). When a
worker process is killed, nothing in it runs again: the run would stay "measuring" and hold its
hosts forever, and a killed task is not redelivered. Celery beat calls sweep_stale_runs() every
30 s; a second delivery of the task of such a run takes it over at once.

A run that was warming up or measuring goes on on its host (pgbench runs detached), and one
that was collecting still has everything it collects there (the cleanup has not begun): the
sweeper hands it to another worker, which reattaches to it and finishes it (services.reattach).
A run whose results were stored (its worker died while cleaning up) is cleaned up from here and
ends as its results say, with a note. A run in any other stage is stopped where it is, and
failed saying so.
"""

import logging
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from runs.jobs.dispatch import release_hosts, send_on_commit
from runs.jobs.kinds import KINDS, RUN
from runs.models import ACTIVE_STATES, Host, Run, RunState
from runs.services.execute import run_after_end
from runs.services.heartbeat import stale_after_s
from runs.services.pending_cleanup import clean_up_run_hosts
from runs.services.run_results import stored_failure
from runs.services.runs import run_transition

log = logging.getLogger(__name__)
# pgbench runs detached: it can be followed again; its outputs stay until the cleanup: collected again.
REATTACHABLE = (RunState.WARMING_UP, RunState.MEASURING, RunState.COLLECTING)
REATTACH_TASK = "runs.reattach_run"  # runs.tasks.reattach_run
REATTACH_PENDING = "(its worker died: waiting for a worker to reattach)"  # Run.worker meanwhile


def stale_runs() -> list[Run]:
    """Started runs in an active state whose worker has not given a sign of life lately; also
    those still "queued" that a worker had started (it died connecting, before the first step)."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_s())
    silent = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    running = Q(state__in=ACTIVE_STATES) | Q(state=RunState.QUEUED)
    runs = Run.objects.filter(silent, running, started_at__isnull=False)
    runs = runs.select_related("server_host", "device", "pg_install").prefetch_related("run_clients__host")
    return list(runs.order_by("pk"))


def sweep_stale_runs() -> list[int]:
    """Take over every run whose worker died; the ids of those this call ended or handed over."""
    ended = []
    for run in stale_runs():
        if _take_over(run):
            ended.append(run.pk)
    return ended


def resend_claimed_runs() -> list[int]:
    """Send again the task of each run the dispatcher gave its hosts to and no worker started:
    it may have been lost with the worker that had taken it, or with the broker (a machine
    restart). A run is started once however often its task comes (services.execute); its ids."""
    holding = Host.objects.filter(claimed_by__isnull=False).values("claimed_by_id")
    waiting = list(Run.objects.filter(pk__in=holding, state=RunState.QUEUED, started_at__isnull=True).order_by("pk"))
    for run in waiting:
        log.warning("run %s holds its hosts and no worker has started it: its task is sent again", run.pk)
        send_on_commit(KINDS[RUN].task, run.pk)
    return [run.pk for run in waiting]


def sweep_run(run_id: int) -> bool:
    """Take this run over if its worker died (a second delivery of its task found it silent)."""
    run = next((r for r in stale_runs() if r.pk == run_id), None)
    return run is not None and _take_over(run)


def _take_over(run: Run) -> bool:
    """End the run from this process or hand it to a worker to reattach, unless another
    sweeper (or a worker that came back to life) moved it since it was read."""
    was, last_sign = RunState(run.state), run.heartbeat_at or run.started_at
    if was in REATTACHABLE and run.results_stored_at is None:
        return _hand_over(run)
    if not run_transition(run=run, state=RunState.CLEANING_UP, from_state=was, heartbeat_at=timezone.now()):
        return False
    if run.results_stored_at is not None:
        run_ended_from_results(run, was, last_sign)
    else:
        run_abandoned(run, was, last_sign)
    return True


def _hand_over(run: Run) -> bool:
    """Leave the run in its state and send it to a worker to reattach (runs.reattach_run). The
    heartbeat stamped now keeps other sweepers off it until that worker beats for it (or, if
    none does in time, until it is found silent again and handed over anew)."""
    silent = Run.objects.filter(pk=run.pk, state=run.state)
    silent = silent.filter(heartbeat_at=run.heartbeat_at) if run.heartbeat_at else silent.filter(heartbeat_at=None)
    if not silent.update(heartbeat_at=timezone.now(), worker=REATTACH_PENDING):
        return False
    log.warning("run %s: its worker stopped while %s; a worker reattaches", run.pk, RunState(run.state).label)
    send_on_commit(REATTACH_TASK, run.pk)
    return True


def run_abandoned(run: Run, was: RunState, last_sign: datetime | None) -> None:
    """The run's worker is gone (it was `was`, last heard of at `last_sign`): remove what it
    left on its hosts, fail it saying what happened, and give its hosts to the next run."""
    notes = clean_up_run_hosts(run)
    error = f"{_stopped_while(was, last_sign)}; " + "; ".join(notes)
    release_hosts(run)
    run_transition(run=run, state=RunState.FAILED, failed_step=was, error=error)
    log.warning("run %s abandoned by its worker: %s", run.pk, error)
    run_after_end(run)


def run_ended_from_results(run: Run, was: RunState, last_sign: datetime | None) -> None:
    """The run's worker died after it had stored the results (while cleaning up): remove what
    it left on its hosts, and end the run as its results say (done, unless pgbench failed or a
    cancel stopped it), noting what happened; its hosts go to the next run."""
    notes = clean_up_run_hosts(run)
    failure = stored_failure(run)
    state = RunState.CANCELLED if run.cancel_requested else RunState.FAILED if failure else RunState.DONE
    note = f"{_stopped_while(was, last_sign)}, after its results were stored; " + "; ".join(notes)
    release_hosts(run)
    run_transition(run=run, state=state, **failure | {"error": "; ".join(filter(None, [failure.get("error"), note]))})
    log.warning("run %s ended from its stored results: %s", run.pk, note)
    run_after_end(run)


def _stopped_while(was: RunState, last_sign: datetime | None) -> str:
    since = f"no sign of life since {timezone.localtime(last_sign):%H:%M:%S %Z}" if last_sign else "no sign of life"
    stage = "starting it" if was == RunState.QUEUED else was.label  # connecting to its hosts, probing them
    return f"the worker running it stopped while {stage} ({since})"
