"""What the tests wait for while a worker runs something: a run's state or samples, a build's or
a baseline's progress. One deadline loop (runs/lab/transport/waiting.py); a timeout fails the test saying
what was awaited and what was seen instead."""

from collections.abc import Callable
from typing import TypeVar

from django.db import models

from runs.lab.transport.waiting import wait_until
from runs.models import Run

Row = TypeVar("Row", bound=models.Model)


def refreshed_until(row: Row, done: Callable[[Row], bool], timeout: float, what: str, interval: float = 0.3) -> Row:
    """The row, read again from the database until done(row); a timeout fails with `what` and
    the row's state."""

    def check() -> bool:
        row.refresh_from_db()
        return done(row)

    if not wait_until(check, timeout, interval):
        state = getattr(row, "state", "")
        raise AssertionError(f"{type(row).__name__} {row.pk} not {what} after {timeout:g} s (state {state!r})")
    return row


def wait_until_finished(run: Run, timeout: float = 180) -> Run:
    return refreshed_until(run, lambda r: r.is_finished, timeout, "finished", interval=0.5)


def wait_for_state(run: Run, state: str, timeout: float = 120) -> None:
    refreshed_until(run, lambda r: r.state == state, timeout, f"in state {state}", interval=0.2)


def wait_for_samples(run: Run, count: int, timeout: float = 60) -> None:
    if not wait_until(lambda: run.samples.count() >= count, timeout, 0.2):
        raise AssertionError(f"run {run.pk}: fewer than {count} samples after {timeout:g} s")
