"""The run's life around the lab work, without a lab: claims, second deliveries of its task,
the heartbeat, cancels that race the claim, and failures of benchlab itself."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from pytest_django.fixtures import DjangoCaptureOnCommitCallbacks

from runs.bench.services.execute import run_execute
from runs.bench.services.observer import RunCancelled, RunObserver
from runs.bench.services.pending_cleanup import retry_pending_cleanups
from runs.bench.services.reattach import run_reattach
from runs.bench.services.sweeper import REATTACH_PENDING, REATTACH_TASK, RUN_RECOVERY, sweep_run
from runs.jobs.dispatch import queue_dispatch
from runs.jobs.heartbeat import job_heartbeat, stale_after_s
from runs.jobs.kinds import KINDS
from runs.jobs.selectors import run_wait
from runs.jobs.sweeper import sweep_stale
from runs.lab.benchmark.run import Step
from runs.lab.transport.waiting import wait_until
from runs.models import Host, Run, RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.sent_tasks import record_sent_tasks

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


@pytest.fixture
def reattach_sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The runs the sweeper hands to a worker to reattach (no worker here to take them)."""
    return record_sent_tasks(monkeypatch)["runs.reattach_run"]


def unreachable_running_run(state: RunState = RunState.INITIALIZING_DATABASE, **fields: object) -> Run:
    """A started run on a host benchlab cannot connect to (its key does not decrypt): the
    sweeper's cleanup fails before any network traffic, and the run must end all the same."""
    host = make_host(private_key_path="", private_key_encrypted="gAAAA-not-a-token")
    started = timezone.now() - timedelta(minutes=10)
    run = make_run(host, make_device(host), make_pg_install(host), state=state, started_at=started,
                   **fields)  # fmt: skip
    Host.objects.filter(pk=host.pk).update(claimed_by=run)
    return run


def test_a_second_delivery_of_a_run_whose_worker_died_ends_it_and_leaves_its_host_for_cleanup() -> None:
    run = unreachable_running_run(heartbeat_at=timezone.now() - timedelta(seconds=stale_after_s() + 1))
    waiting = make_run(run.server_host, run.device, run.pg_install, state=RunState.QUEUED)

    assert run_execute(run_id=run.pk) == "abandoned"
    assert sweep_run(run.pk) and not sweep_run(run.pk)

    run.refresh_from_db()
    assert run.state == RunState.FAILED and run.failed_step == RunState.INITIALIZING_DATABASE
    assert run.error.startswith("the worker running it stopped while initializing database (no sign of life since ")
    assert "lab1 could not be reached to clean up" in run.error and "cannot be decrypted" in run.error
    assert_left_for_cleanup(run, waiting)


def assert_left_for_cleanup(run: Run, waiting: Run) -> None:
    """What the run left on its host may still be there: the host is free of the run but takes
    no other until it has been cleaned up (bench.services.pending_cleanup), which it says."""
    assert "cleanup pending on lab1: it is done when the host answers again" in run.error
    host = Host.objects.get(pk=run.server_host_id)
    assert (host.claimed_by_id, host.cleanup_pending_for_id) == (None, run.pk)
    assert queue_dispatch() == [] and claim_of(waiting) is None
    waits = [str(wait) for wait in run_wait(waiting)]
    assert waits == [f"lab1 waits to be cleaned up after run {run.pk} (it could not be reached)"]
    assert retry_pending_cleanups() == []  # the beat tries again: still no connection, still held
    assert Host.objects.get(pk=host.pk).cleanup_pending_for_id == run.pk


def test_the_sweeper_takes_silent_runs_over_once_and_leaves_live_and_queued_ones_alone(
    reattach_sent: list[int], django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    silent = unreachable_running_run(heartbeat_at=timezone.now() - timedelta(seconds=stale_after_s() + 1))
    never_beat = make_run(silent.server_host, silent.device, silent.pg_install, state=RunState.PREPARING_STORAGE,
                          started_at=timezone.now() - timedelta(seconds=stale_after_s() + 5))  # fmt: skip
    live = make_run(silent.server_host, silent.device, silent.pg_install, state=RunState.MEASURING,
                    started_at=timezone.now() - timedelta(hours=1), heartbeat_at=timezone.now())  # fmt: skip
    queued = make_run(silent.server_host, silent.device, silent.pg_install, state=RunState.QUEUED)
    measuring = make_run(silent.server_host, silent.device, silent.pg_install, state=RunState.WARMING_UP,
                         started_at=timezone.now() - timedelta(hours=1))  # fmt: skip

    with django_capture_on_commit_callbacks(execute=True):  # the task is sent once the hand-over commits
        assert sweep_stale(RUN_RECOVERY) == [silent.pk, never_beat.pk, measuring.pk]
        assert sweep_stale(RUN_RECOVERY) == []

    states = dict(Run.objects.values_list("pk", "state"))
    assert states[live.pk] == RunState.MEASURING and states[queued.pk] == RunState.QUEUED
    assert "stopped while preparing storage" in Run.objects.get(pk=never_beat.pk).error
    # pgbench goes on on the host: the run stays as it is, for a worker to reattach to it.
    measuring.refresh_from_db()
    assert reattach_sent == [measuring.pk] and measuring.state == RunState.WARMING_UP
    stamped = measuring.heartbeat_at  # now: other sweepers leave it to the worker
    assert measuring.worker == REATTACH_PENDING and stamped and timezone.now() - stamped < timedelta(seconds=5)


def test_a_reattaching_worker_that_cannot_reach_the_host_fails_the_run_and_leaves_it_for_cleanup(
    reattach_sent: list[int], django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    run = unreachable_running_run(
        RunState.MEASURING, heartbeat_at=timezone.now() - timedelta(seconds=stale_after_s() + 1)
    )
    waiting = make_run(run.server_host, run.device, run.pg_install, state=RunState.QUEUED)
    assert run_reattach(run_id=run.pk) == "not reattached"  # not handed over: its worker may be alive

    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_run(run.pk)
    assert reattach_sent == [run.pk]
    assert run_reattach(run_id=run.pk) == RunState.FAILED
    assert run_reattach(run_id=run.pk) == "not reattached"  # a second delivery does nothing

    run.refresh_from_db()
    assert run.failed_step == RunState.MEASURING and run.worker.endswith("(reattached)")
    assert run.error.startswith("its worker stopped while measuring, and reattaching failed: ")
    assert "lab1 could not be reached to clean up" in run.error and "cannot be decrypted" in run.error
    assert_left_for_cleanup(run, waiting)


def test_the_sweeper_runs_every_30_seconds_and_its_thresholds_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from benchlab.celery import app
    from benchlab.env import env_seconds

    app.loader.import_default_modules()  # what a worker imports as it starts (runs.tasks)
    assert settings.CELERY_BEAT_SCHEDULE["sweep-stale-runs"] == {"task": "runs.sweep_stale_runs", "schedule": 30.0}
    assert "runs.sweep_stale_runs" in app.tasks
    monkeypatch.setenv("BENCHLAB_STALE_AFTER_S", "soon")
    with pytest.raises(ImproperlyConfigured, match="must be a number of seconds from 2 to 3600"):
        env_seconds("BENCHLAB_STALE_AFTER_S", 90.0, low=2.0, high=3600.0)


def test_every_task_benchlab_sends_by_name_is_one_a_worker_has() -> None:
    from benchlab.celery import app

    app.loader.import_default_modules()  # what a worker imports as it starts (runs.tasks)
    sent = {kind.task for kind in KINDS.values()} | {REATTACH_TASK}
    sent |= {str(entry["task"]) for entry in settings.CELERY_BEAT_SCHEDULE.values()}

    assert sent - set(app.tasks) == set()
    assert len(sent) >= 5


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

    def stamped_twice() -> bool:
        run.refresh_from_db()
        stamps.add(run.heartbeat_at)
        return len(stamps - {None}) >= 2

    with job_heartbeat(run, every_s=0.05):
        wait_until(stamped_twice, 10, 0.01)

    assert len(stamps - {None}) >= 2, "the heartbeat was not renewed"
