"""Celery entry points. Each task is thin: it takes ids or plain values and calls a service."""

import os
import socket
from collections.abc import Callable
from typing import Any, TypedDict

from celery import Task, shared_task
from celery.signals import worker_ready
from django.db import connection

from runs.baselines.services.execute import BaselineExecution
from runs.baselines.services.sweeper import BASELINE_RECOVERY, sweep_baseline
from runs.bench.services.execute import RunExecution
from runs.bench.services.pending_cleanup import retry_pending_cleanups
from runs.bench.services.reattach import run_reattach
from runs.bench.services.sweeper import RUN_RECOVERY, sweep_run
from runs.builds.services.execute import BuildExecution
from runs.builds.services.sweeper import BUILD_RECOVERY, sweep_build
from runs.inventory.services.device_health import device_health_read
from runs.jobs.dispatch import queue_dispatch
from runs.jobs.execute import Execution, job_execute
from runs.jobs.heartbeat import stale_after_s
from runs.jobs.kinds import RUN
from runs.jobs.sweeper import resend_claimed_jobs, sweep_stale_jobs
from runs.notify.services.deliver import deliver, due_notifications, hand_over
from runs.schedules.services.rounds import schedule_fire
from runs.watch.services.hooks import watch_round_ended


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


def _execute(task: Task, execution: type[Execution[Any]], job_id: int, sweep: Callable[[int], object]) -> str:
    """Do a job whose hosts the dispatcher claimed for it (jobs.execute.job_execute).

    A second delivery of a job that another worker is doing watches it instead: it looks again
    once a heartbeat could have gone stale, and has the job swept now if its worker died."""
    outcome = job_execute(execution, job_id)
    if outcome == "running":
        raise task.retry(countdown=stale_after_s())
    if outcome == "abandoned":
        sweep(job_id)
    return outcome


@shared_task(bind=True, name="runs.execute_run", max_retries=None, acks_late=True)
def execute_run(self: Task, run_id: int) -> str:
    """Run a queued run (bench.services.execute)."""
    return _execute(self, RunExecution, run_id, sweep_run)


@shared_task(bind=True, name="runs.execute_build", max_retries=None, acks_late=True)
def execute_build(self: Task, build_id: int) -> str:
    """Build PostgreSQL for a queued build (builds.services.execute)."""
    return _execute(self, BuildExecution, build_id, sweep_build)


@shared_task(bind=True, name="runs.execute_baseline", max_retries=None, acks_late=True)
def execute_baseline(self: Task, baseline_id: int) -> str:
    """Measure a device with fio for a queued baseline (baselines.services.execute)."""
    return _execute(self, BaselineExecution, baseline_id, sweep_baseline)


@shared_task(name="runs.reattach_run", acks_late=False)
def reattach_run(run_id: int) -> str:
    """Finish a run whose worker died while it was measuring (sent by the sweeper). Not late
    acks: if this worker dies too, the sweeper finds the run silent again and sends it anew."""
    return run_reattach(run_id=run_id)


@shared_task(name="runs.schedule_round")
def schedule_round(schedule_id: int) -> str:
    """A campaign schedule's time has come (beat, django_celery_beat): queue its next round or record why not."""
    firing = schedule_fire(schedule_id=schedule_id)
    return firing.outcome if firing is not None else "nothing (the schedule is gone or paused)"


@shared_task(name="runs.read_device_health")
def read_device_health(device_id: int) -> str:
    """ "Read health now" on the device page: smartctl on its host, stored (runs.inventory.services.device_health)."""
    return device_health_read(device_id)


@shared_task(name="runs.watch_round_ended")
def watch_round_ended_task(run_id: int) -> int:
    """After a run's end: if it ended a round, store its series' change points (runs.watch.services.hooks)."""
    return watch_round_ended(run_id)


@shared_task(name="runs.deliver_notification")
def deliver_notification(notification_id: int, ticket: str | None = None) -> str:
    """Email or POST one notification (runs.notify.services.deliver); a failure is kept and retried later."""
    return deliver(notification_id, ticket)


@shared_task(name="runs.deliver_due_notifications")
def deliver_due_notifications() -> int:
    """Send the notifications whose attempt is due (beat, every minute): retries, and any whose task
    was lost or has waited for a worker too long (runs.notify.services.deliver: hand_over)."""
    handed = hand_over(due_notifications())
    for notification_id, ticket in handed:
        deliver_notification.delay(notification_id, ticket)
    return len(handed)


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
