"""Runs whose worker died: what taking one over means for a run. Finding it by its silent
heartbeat and claiming it are every job's (runs.jobs.sweeper); a second delivery of its task
takes it over at once (sweep_run).

A run that was warming up or measuring goes on on its host (pgbench runs detached), and one
that was collecting still has everything it collects there (the cleanup has not begun): the
sweeper hands it to another worker, which reattaches to it and finishes it (bench.services.reattach).
A run whose results were stored (its worker died while cleaning up) is cleaned up from here and
ends as its results say, with a note. A run in any other stage is stopped where it is, and
failed saying so.
"""

import logging
from datetime import datetime

from runs.bench.services.pending_cleanup import clean_up_run_hosts
from runs.bench.services.results import stored_failure
from runs.jobs.dispatch import release_hosts, send_on_commit
from runs.jobs.execute import job_after_end
from runs.jobs.kinds import KINDS, RUN
from runs.jobs.sweeper import Recovery, no_sign_of_life, sweep_job
from runs.jobs.transitions import run_transition
from runs.models import ACTIVE_STATES, Run, RunState

log = logging.getLogger(__name__)
# pgbench runs detached: it can be followed again; its outputs stay until the cleanup: collected again.
REATTACHABLE = (RunState.WARMING_UP, RunState.MEASURING, RunState.COLLECTING)
REATTACH_TASK = "runs.reattach_run"  # runs.tasks.reattach_run
REATTACH_PENDING = "(its worker died: waiting for a worker to reattach)"  # Run.worker meanwhile


def run_taken_over(run: Run, state: str, last_sign: datetime | None) -> None:
    """The sweeper has claimed the run (jobs.sweeper): hand it to a worker to reattach, or end it
    from here, unless something else (a cancel) moved it meanwhile."""
    was = RunState(state)
    if was in REATTACHABLE and run.results_stored_at is None:
        _hand_over(run, was)
    elif run_transition(run=run, state=RunState.CLEANING_UP, from_state=was):
        ending = run_abandoned if run.results_stored_at is None else run_ended_from_results
        ending(run, was, last_sign)


# Also a run a worker had started that is still "queued" (it died connecting, before the first step).
RUN_RECOVERY = Recovery(
    KINDS[RUN], (RunState.QUEUED, *ACTIVE_STATES), run_taken_over,
    related=("server_host", "device", "pg_install"), prefetched=("run_clients__host",),
    orphans=False,  # a run frees its hosts before it ends (jobs.execute.drive_to_end): none outlives it
)  # fmt: skip


def sweep_run(run_id: int) -> bool:
    """Take this run over if its worker died (a second delivery of its task found it silent)."""
    return sweep_job(RUN_RECOVERY, run_id)


def _hand_over(run: Run, was: RunState) -> None:
    """Leave the run in its state and send it to a worker to reattach (runs.reattach_run). The
    heartbeat the claim stamped keeps other sweepers off it until that worker beats for it (or,
    if none does in time, until it is found silent again and handed over anew)."""
    Run.objects.filter(pk=run.pk).update(worker=REATTACH_PENDING)
    log.warning("run %s: its worker stopped while %s; a worker reattaches", run.pk, was.label)
    send_on_commit(REATTACH_TASK, run.pk)


def run_abandoned(run: Run, was: RunState, last_sign: datetime | None) -> None:
    """The run's worker is gone (it was `was`, last heard of at `last_sign`): remove what it
    left on its hosts, fail it saying what happened, and give its hosts to the next run."""
    notes = clean_up_run_hosts(run)
    error = f"{_stopped_while(was, last_sign)}; " + "; ".join(notes)
    release_hosts(run)
    run_transition(run=run, state=RunState.FAILED, failed_step=was, error=error)
    log.warning("run %s abandoned by its worker: %s", run.pk, error)
    job_after_end(run)


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
    job_after_end(run)


def _stopped_while(was: RunState, last_sign: datetime | None) -> str:
    stage = "starting it" if was == RunState.QUEUED else was.label  # connecting to its hosts, probing them
    return f"the worker running it stopped while {stage} ({no_sign_of_life(last_sign)})"
