"""Celery entry points. Each task is thin: it takes ids or plain values and calls a service."""

import os
import socket
from collections.abc import Callable
from typing import TypedDict

from celery import Task, shared_task
from celery.signals import worker_ready
from django.db import connection

from runs.jobs.dispatch import queue_dispatch
from runs.jobs.kinds import RUN
from runs.jobs.sweeper import resend_claimed_jobs, sweep_stale_jobs
from runs.services.baseline_execute import baseline_execute
from runs.services.baseline_sweeper import BASELINE_RECOVERY, sweep_baseline
from runs.services.build_execute import build_execute
from runs.services.build_sweeper import BUILD_RECOVERY, sweep_build
from runs.services.execute import run_execute
from runs.services.heartbeat import stale_after_s
from runs.services.pending_cleanup import retry_pending_cleanups
from runs.services.reattach import run_reattach
from runs.services.sweeper import RUN_RECOVERY, sweep_run


class WorkerSelfCheck(TypedDict):
    hostname: str
    pid: int
    database: str | None


@shared_task(name="runs.worker_self_check")
def worker_self_check() -> WorkerSelfCheck:
    """Answer from inside a worker: who ran this, and can it reach benchlab's database?"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        row = cursor.fetchone()
    return {"hostname": socket.gethostname(), "pid": os.getpid(), "database": row[0] if row else None}


def _settled(task: Task, outcome: str, sweep: Callable[[], object]) -> str:
    """A job's outcome as its worker says it: "running" elsewhere is looked at again once a
    heartbeat could have gone stale; "abandoned" (that worker died) is swept now."""
    if outcome == "running":
        raise task.retry(countdown=stale_after_s())
    if outcome == "abandoned":
        sweep()
    return outcome


@shared_task(bind=True, name="runs.execute_run", max_retries=None, acks_late=True)
def execute_run(self: Task, run_id: int) -> str:
    """Run a queued run whose hosts the dispatcher claimed for it (services.queue).

    A second delivery of a run that another worker is running watches it instead: it looks
    again after a heartbeat could have gone stale, and ends the run if its worker died."""
    return _settled(self, run_execute(run_id=run_id), lambda: sweep_run(run_id))


@shared_task(bind=True, name="runs.execute_build", max_retries=None, acks_late=True)
def execute_build(self: Task, build_id: int) -> str:
    """Build PostgreSQL for a queued build whose host the dispatcher claimed for it
    (services.build_execute). A second delivery watches it as execute_run does a run's."""
    return _settled(self, build_execute(build_id=build_id), lambda: sweep_build(build_id))


@shared_task(bind=True, name="runs.execute_baseline", max_retries=None, acks_late=True)
def execute_baseline(self: Task, baseline_id: int) -> str:
    """Measure a device with fio for a queued baseline whose host the dispatcher claimed for it
    (services.baseline_execute). A second delivery watches it as execute_run does a run's."""
    return _settled(self, baseline_execute(baseline_id=baseline_id), lambda: sweep_baseline(baseline_id))


@shared_task(name="runs.reattach_run", acks_late=False)
def reattach_run(run_id: int) -> str:
    """Finish a run whose worker died while it was measuring (sent by the sweeper). Not late
    acks: if this worker dies too, the sweeper finds the run silent again and sends it anew."""
    return run_reattach(run_id=run_id)


@shared_task(name="runs.dispatch_queue")
def dispatch_queue() -> list[int]:
    """Start the runs and builds whose turn it is (also run periodically by beat, as a safety
    net); the ids of the runs started."""
    return queue_dispatch()


@shared_task(name="runs.sweep_stale_runs")
def sweep_stale_runs_task() -> list[int]:
    """End the runs, builds and fio baselines whose worker died (runs.jobs.sweeper), and clean up hosts that
    answer again after a run that could not (run periodically by beat). The ids of the runs taken over."""
    retry_pending_cleanups()
    return sweep_stale_jobs((BUILD_RECOVERY, BASELINE_RECOVERY, RUN_RECOVERY))[RUN]


@shared_task(name="runs.take_over_after_start")
def take_over_after_start() -> list[int]:
    """What a worker that starts does first: jobs whose task was lost are sent again, and jobs
    whose worker died are taken over (sweep_stale_runs_task). The ids of the runs taken over."""
    resend_claimed_jobs()
    return sweep_stale_runs_task()


@worker_ready.connect
def take_over_when_ready(**_: object) -> None:
    """A worker that starts (again: `make run` after the last worker was killed, or the machine
    restarted) takes over at once what the dead one left, instead of at beat's next sweep."""
    take_over_after_start.delay()
