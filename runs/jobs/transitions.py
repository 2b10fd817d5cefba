"""A job's move from one state to the next, for the jobs that keep no history of their states
(PostgreSQL builds, fio baselines; a run records each move, bench.services.runs.run_transition).

The move is one conditional UPDATE: a job that has ended, or that is not in the state the caller
expects, does not move, so two writers (the worker and a cancel, the worker and the sweeper)
never both win. Retried through a restart of benchlab's database."""

from typing import Any, TypeVar

from django.db import models
from django.utils import timezone

from runs.common.db_retry import with_database_retry

Job = TypeVar("Job", bound=models.Model)


def job_transition(
    job: Job,
    state: str,
    ended_states: Any,
    from_state: str | None,
    fields: dict[str, Any],
    finishing_states: Any = None,
) -> bool:
    """Move `job` to `state` (with `fields`) unless it has ended, or, with from_state, unless it
    is not in that state; False if it did not move. Moving to one of the finishing states (the
    ended ones unless told otherwise) stamps finished_at. The object is updated as the row was."""
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
