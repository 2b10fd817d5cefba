"""The whole worker killed: SIGKILL of Celery's main process, whose prefork pool processes die
with it (as on a machine restart), while one run measures and another is being started; then a
new worker starts in its place, as `make run` starts one. On its own (no sweep called by the
test) it reattaches the measuring run and finishes it with every sample, fails the one that was
being started saying so, and frees both hosts. A run whose task the broker lost (a restart of a
Redis that had not saved it) is started by the next worker that starts."""

import time
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import LazySettings

from benchlab.celery import app as celery_app
from runs.lab.transport.waiting import wait_until
from runs.models import Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.jobs.test_network_loss import link_down
from runs.tests.virtual_lab import VirtualLab
from runs.tests.waits import refreshed_until, wait_for_samples, wait_for_state, wait_until_finished
from runs.tests.workers import own_worker, start_celery_worker, worker_env

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
BEATS = {"BENCHLAB_HEARTBEAT_EVERY_S": 1.0, "BENCHLAB_STALE_AFTER_S": 4.0}  # silent for 4 s: dead


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_worker_killed_whole_is_replaced_and_the_new_one_takes_over_its_runs(
    settings: LazySettings, lab_inventory: dict[str, Host], virtual_lab: VirtualLab
) -> None:
    lab1, lab2 = lab_inventory["lab1"], lab_inventory["lab2"]
    otto = make_user("otto", "operator")
    with own_worker(settings, concurrency=2, **BEATS) as first:
        measuring = new_run(lab1, otto, duration_s=10, warmup_s=0)
        wait_for_state(measuring, RunState.MEASURING)
        wait_for_samples(measuring, 2)
        with link_down(virtual_lab, "lab2"):  # its worker waits to connect (10 s) when it is killed
            starting = new_run(lab2, otto)
            refreshed_until(starting, lambda r: r.started_at is not None, 30, "started by its worker")
            pool = first.pool_pids()
            first.process.kill()
            first.process.wait(timeout=10)
            assert wait_until(lambda: not any(alive(pid) for pid in pool), 10, 0.1), "pool processes outlived it"
        time.sleep(5)
        stuck = {run.pk: (run.state, run.started_at is not None) for run in Run.objects.all()}
        holders = dict(Host.objects.filter(pk__in=[lab1.pk, lab2.pk]).values_list("pk", "claimed_by_id"))

        second = start_celery_worker(concurrency=2, env=worker_env(BEATS), queue=first.queue)
        try:
            measuring = wait_until_finished(measuring, timeout=90)
            starting = wait_until_finished(starting, timeout=60)
        finally:
            log = second.log()
            second.stop()

    assert stuck == {measuring.pk: (RunState.MEASURING, True), starting.pk: (RunState.QUEUED, True)}
    assert holders == {lab1.pk: measuring.pk, lab2.pk: starting.pk}
    assert measuring.state == RunState.DONE, (measuring.error, log[-3000:])
    assert measuring.worker.endswith("(reattached)")
    seconds = list(measuring.samples.order_by("second").values_list("second", flat=True))
    assert seconds == list(range(1, 11)), seconds
    assert measuring.tps and measuring.tps > 0 and measuring.results_stored_at is not None
    assert (starting.state, starting.failed_step) == (RunState.FAILED, RunState.QUEUED), (starting.error, log[-3000:])
    assert starting.error.startswith("the worker running it stopped while starting it (no sign of life since ")
    assert f"cleaned up on {lab2.name}:" in starting.error
    assert list(Host.objects.filter(pk__in=[lab1.pk, lab2.pk]).values_list("claimed_by_id", flat=True)) == [None] * 2


def test_a_run_holding_its_host_whose_task_was_lost_is_started_by_the_next_worker(
    settings: LazySettings, lab_inventory: dict[str, Host]
) -> None:
    queue, default = f"test-lost-{uuid.uuid4().hex[:10]}", celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    try:
        run = new_run(lab_inventory["lab1"], make_user("otto", "operator"))  # claimed, its task sent
        broker = redis.Redis.from_url(settings.REDIS_URL)
        sent = broker.llen(queue)
        broker.delete(queue)  # lost: the broker restarted without having saved it
        broker.close()
        worker = start_celery_worker(concurrency=1, queue=queue)
        try:
            run = wait_until_finished(run, timeout=90)
        finally:
            log = worker.log()
            worker.stop()
    finally:
        celery_app.conf.task_default_queue = default

    assert sent == 1
    assert run.state == RunState.DONE, (run.error, log[-3000:])
    assert "holds its hosts and no worker has started it: its task is sent again" in log
    assert Host.objects.get(pk=lab_inventory["lab1"].pk).claimed_by_id is None
