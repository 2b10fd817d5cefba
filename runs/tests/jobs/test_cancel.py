"""Cancel at any moment: queued, just as its worker starts it, during mkfs, during `pgbench -i`,
while measuring (test_run_execution.py). Each ends promptly, with nothing of the run left on
the host, and the host free for the next run. A cancel that comes before the worker touched a
host leaves every host untouched."""

import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from runs.bench.services import execute
from runs.bench.services.execute import run_execute
from runs.jobs import hooks
from runs.jobs.cancel import job_cancel
from runs.jobs.cancel_watch import CancelWatch
from runs.jobs.kinds import BUILD, RUN
from runs.lab.transport.waiting import wait_until
from runs.models import Host, Run, RunState, RunTransition
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.job_factories import make_build
from runs.tests.jobs.test_worker_death import left_on_host
from runs.tests.waits import wait_for_state, wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory"]  # a fixture, used by name
PROMPTLY = timedelta(seconds=10)  # from the cancel to the run's end, its cleanup included


@pytest.mark.django_db
def test_a_queued_run_cancelled_just_as_its_worker_starts_it_touches_no_host(monkeypatch: pytest.MonkeyPatch) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    Host.objects.filter(pk=host.pk).update(claimed_by=run)  # the dispatcher gave it its host
    otto = make_user("otto", "operator")
    run.queued_by = otto
    run.save(update_fields=["queued_by"])
    mark_started = execute.RunExecution.start

    def started_then_cancelled(doing: execute.RunExecution, now: datetime, worker: str) -> bool:
        started = mark_started(doing, now, worker)
        job_cancel(Run.objects.get(pk=run.pk), by=otto)  # the click lands right after the start stamp
        return started

    connected: list[Host] = []
    monkeypatch.setattr(execute.RunExecution, "start", started_then_cancelled)
    monkeypatch.setattr(execute, "host_connect_for_run", connected.append)

    assert run_execute(run_id=run.pk) == RunState.CANCELLED
    assert connected == []  # no connection, no probe
    assert Host.objects.get(pk=host.pk).claimed_by_id is None


@pytest.mark.django_db
def test_a_job_cancelled_in_the_queue_has_what_follows_its_end_called_once(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    # A campaign (a scheduled round) whose last runs are cancelled while queued has ended: the
    # regression watch and the canaries hear of it as of any run's end (review of issue 34).
    host = make_host()
    otto = make_user("otto", "operator")
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED, queued_by=otto)
    build = make_build(host, otto)
    ended: list[object] = []
    monkeypatch.setattr(hooks, "_HOOKS", {RUN: [ended.append], BUILD: [ended.append]})

    with django_capture_on_commit_callbacks(execute=True):
        job_cancel(run, by=otto)
        job_cancel(build, by=otto)

    assert ended == [run, build]  # the build's own transition calls its hooks, and only it


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the watch reads from a thread of its own
def test_the_cancel_watch_acts_once_when_the_flag_is_set_and_not_before() -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING)
    calls: list[bool] = []
    with CancelWatch(run, lambda: calls.append(True), every_s=0.02):
        time.sleep(0.2)
        before = list(calls)
        Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        wait_until(lambda: bool(calls), 10, 0.01)
        time.sleep(0.2)  # and it does not act again

    assert before == [] and calls == [True]


def ended_promptly(run: Run, cancelled_at: float) -> float:
    """Seconds from the cancel to the run's end, as the test saw them."""
    finished = wait_until_finished(run, timeout=120)
    assert finished.state == RunState.CANCELLED, (finished.error, finished.failed_output)
    return time.monotonic() - cancelled_at


def states_passed(run: Run) -> list[str]:
    return list(RunTransition.objects.filter(run=run).order_by("at", "pk").values_list("state", flat=True))


@pytest.mark.lab
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_cancel_during_mkfs_ends_the_run_before_its_database_and_leaves_nothing(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    run = new_run(lab1, otto, device=lab1.devices.get(name="hdd"), filesystem="btrfs", mount_options="")
    wait_for_state(run, RunState.PREPARING_STORAGE, timeout=60)
    job_cancel(run, by=otto)
    took = ended_promptly(run, time.monotonic())

    assert took < PROMPTLY.total_seconds()
    assert RunState.INITIALIZING_DATABASE not in states_passed(run)
    assert left_on_host(lab1, run) == {"mounted": False, "processes": [], "run_dir": False}
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    assert wait_until_finished(new_run(lab1, otto, duration_s=1, warmup_s=0)).state == RunState.DONE


@pytest.mark.lab
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_cancel_during_the_load_stops_pgbench_init_at_once(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab2 = lab_inventory["lab2"]
    otto = make_user("otto", "operator")
    # Scale 20 on the HDD-like disk: a load of about a minute.
    run = new_run(lab2, otto, device=lab2.devices.get(name="hdd"), scale=20, duration_s=5, warmup_s=0)
    wait_for_state(run, RunState.INITIALIZING_DATABASE, timeout=60)
    time.sleep(2)  # well into the load
    cancelled_at = time.monotonic()
    job_cancel(run, by=otto)
    took = ended_promptly(run, cancelled_at)

    assert took < PROMPTLY.total_seconds(), f"the load went on for {took:.0f} s after the cancel"
    assert RunState.MEASURING not in states_passed(run) and not run.samples.exists()
    assert left_on_host(lab2, run) == {"mounted": False, "processes": [], "run_dir": False}
    assert Host.objects.get(pk=lab2.pk).claimed_by_id is None
