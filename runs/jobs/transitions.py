"""A job's move from one state to the next, for every kind: `job_transition` for the jobs that keep
no history of their states (PostgreSQL builds, fio baselines), `run_transition` for a run, which
records each move (RunTransition). Each publishes the move to the job's live stream once it
commits; a build's move to an ended state calls what follows its end (jobs.hooks).

The move is one conditional UPDATE: a job that has ended, or that is not in the state the caller
expects, does not move, so two writers (the worker and a cancel, the worker and the sweeper)
never both win. Retried through a restart of benchlab's database."""

from typing import Any, TypeVar

from django.db import models, transaction
from django.utils import timezone

from runs.common.db_retry import with_database_retry
from runs.jobs import live
from runs.jobs.hooks import job_ended
from runs.jobs.kinds import kind_of
from runs.models import (
    ENDED_BUILD_STATES,
    FINAL_STATES,
    BaselineState,
    BuildState,
    DeviceBaseline,
    PgBuild,
    Run,
    RunState,
    RunTransition,
)

Job = TypeVar("Job", bound=models.Model)


def job_transition(
    job: Job,
    state: str,
    from_state: str | None,
    fields: dict[str, Any],
    finishing_states: Any = None,
) -> bool:
    """Move `job` to `state` (with `fields`) unless it has ended, or, with from_state, unless it
    is not in that state; False if it did not move. Moving to one of the finishing states (the
    ended ones its kind declares, unless told otherwise) stamps finished_at. The object is
    updated as the row was."""
    ended_states = kind_of(job).ended_states
    updates: dict[str, Any] = {"state": state, **fields}
    if state in (ended_states if finishing_states is None else finishing_states):
        updates["finished_at"] = timezone.now()
    model = type(job)
    rows = model._default_manager.filter(pk=job.pk)
    rows = rows.filter(state=from_state) if from_state is not None else rows.exclude(state__in=ended_states)
    attempts = 0

    def move() -> bool:
        nonlocal attempts
        attempts += 1
        if rows.update(**updates):
            return True
        # A retried attempt: the one before may have committed, its answer lost with the connection.
        return attempts > 1 and model._default_manager.filter(pk=job.pk, state=state).exists()

    name = model._meta.verbose_name
    if not with_database_retry(move, f"{name} {job.pk}: moving to {state}"):
        return False
    for field_name, value in updates.items():
        setattr(job, field_name, value)
    return True


def _publish_state(run: Run, state: str, **extra: Any) -> None:
    live.publish_state(run, RunState(state), **extra)


def run_transition(
    *, run: Run, state: RunState, from_state: RunState | None = None, note: str = "", **fields: Any
) -> bool:
    """Move the run to `state` unless it has finished already (or, with from_state, unless it
    is not in that state); False if it did not move. `note` says why in the run's history."""
    now = timezone.now()
    updates: dict[str, Any] = {"state": state, **fields}
    if state in FINAL_STATES:
        updates["finished_at"] = now
    rows = Run.objects.filter(pk=run.pk).exclude(state__in=FINAL_STATES)
    if from_state is not None:
        rows = rows.filter(state=from_state)
    attempts = 0

    def move() -> bool:
        nonlocal attempts
        attempts += 1
        with transaction.atomic():  # the state and its history row together
            # A retried attempt: the one before may have committed, its answer lost with the
            # connection. Its history row (this very time) says so; moving again would record
            # the step twice, or find the run finished and say it did not move.
            if attempts > 1 and RunTransition.objects.filter(run=run, state=state, at=now).exists():
                return True
            if not rows.update(**updates):
                return False
            RunTransition.objects.create(run=run, state=state, at=now, note=note)
        return True

    # Retried as a whole from here (not inside its transaction, which a broken connection
    # loses); inside a caller's transaction it is that caller's to retry.
    if not with_database_retry(move, f"run {run.pk}: moving to {state}"):
        return False
    for name, value in updates.items():
        setattr(run, name, value)
    # Once committed (at once outside a transaction): a page must not show what may roll back.
    transaction.on_commit(lambda: _publish_state(run, state, **({"note": note} if note else {})))
    return True


def publish_build_state(build: PgBuild, state: BuildState) -> None:
    live.publish_state(build, state)


def build_transition(*, build: PgBuild, state: BuildState, from_state: BuildState | None = None, **fields: Any) -> bool:
    """Move the build to `state` unless it has ended (or, with from_state, unless it is not in
    that state); False if it did not move. Retried through a restart of benchlab's database."""
    # Removed later, a build keeps the time it finished.
    finishing = (BuildState.DONE, BuildState.FAILED, BuildState.CANCELLED)
    if not job_transition(build, state, from_state, fields, finishing):
        return False
    transaction.on_commit(lambda: publish_build_state(build, state))
    if state in ENDED_BUILD_STATES:
        transaction.on_commit(lambda: job_ended(build))
    return True


def publish_baseline_state(baseline: DeviceBaseline, state: BaselineState) -> None:
    live.publish_state(baseline, state)


def baseline_transition(
    *, baseline: DeviceBaseline, state: BaselineState, from_state: BaselineState | None = None, **fields: Any
) -> bool:
    """Move the baseline to `state` unless it has ended (or, with from_state, unless it is not in
    that state); False if it did not move. Retried through a restart of benchlab's database."""
    if not job_transition(baseline, state, from_state, fields):
        return False
    transaction.on_commit(lambda: publish_baseline_state(baseline, state))
    return True
