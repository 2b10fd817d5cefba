"""The run's life around the lab work, without a lab: claims, second deliveries of its task,
the heartbeat, cancels that race the claim, and failures of benchlab itself."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.lab.benchmark import Step
from runs.models import Host, Run, RunState
from runs.services.execute import RunCancelled, RunObserver, run_execute
from runs.services.heartbeat import STALE_AFTER_S, run_heartbeat
from runs.services.queue import queue_dispatch
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db


def running_run(state: RunState = RunState.MEASURING, **fields: object) -> Run:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=state, **fields)
    Host.objects.filter(pk=host.pk).update(claimed_by=run)
    return run


def claim_of(run: Run) -> int | None:
    return Host.objects.get(pk=run.server_host_id).claimed_by_id


def test_a_second_delivery_leaves_a_run_with_a_live_worker_alone() -> None:
    run = running_run(heartbeat_at=timezone.now() - timedelta(seconds=10))

    assert run_execute(run_id=run.pk) == "running"

    run.refresh_from_db()
    assert run.state == RunState.MEASURING and claim_of(run) == run.pk


def test_a_second_delivery_fails_a_run_whose_worker_died_and_frees_its_host() -> None:
    run = running_run(heartbeat_at=timezone.now() - timedelta(seconds=STALE_AFTER_S + 1))

    assert run_execute(run_id=run.pk) == RunState.FAILED

    run.refresh_from_db()
    assert "worker running it stopped" in run.error and claim_of(run) is None


def test_a_run_that_does_not_hold_its_hosts_waits_for_its_turn() -> None:
    run = running_run(state=RunState.QUEUED)
    other = make_run(run.server_host, run.device, run.pg_install, state=RunState.QUEUED)

    assert run_execute(run_id=other.pk) == "waiting"  # a stray delivery: the host is run's

    other.refresh_from_db()
    assert other.state == RunState.QUEUED and other.started_at is None and claim_of(run) == run.pk


def test_a_run_that_benchlab_cannot_even_connect_for_still_ends_failed() -> None:
    # A stored key that the current CREDENTIALS_KEY cannot decrypt: not a lab error at all.
    host = make_host(private_key_path="", private_key_encrypted="gAAAA-not-a-token")
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    assert queue_dispatch() == [run.pk]

    assert run_execute(run_id=run.pk) == RunState.FAILED

    run.refresh_from_db()
    assert "cannot be decrypted" in run.error and claim_of(run) is None


def test_a_run_cancelled_while_its_hosts_were_being_claimed_does_not_start() -> None:
    run = running_run(state=RunState.CANCELLED)
    observer = RunObserver(run)

    with pytest.raises(RunCancelled):
        observer.step(Step.PREPARING_STORAGE)


def test_after_the_measurement_a_cancel_still_lets_the_results_be_collected() -> None:
    run = running_run(cancel_requested=True)
    observer = RunObserver(run)

    observer.step(Step.COLLECTING)  # does not raise

    assert observer.cancelled


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_heartbeat_is_stamped_while_the_run_runs() -> None:
    run = running_run(heartbeat_at=None)

    stamps: set[object] = set()
    with run_heartbeat(run, every_s=0.05):
        deadline = timezone.now() + timedelta(seconds=10)
        while len(stamps - {None}) < 2 and timezone.now() < deadline:
            run.refresh_from_db()
            stamps.add(run.heartbeat_at)

    assert len(stamps - {None}) >= 2, "the heartbeat was not renewed"
