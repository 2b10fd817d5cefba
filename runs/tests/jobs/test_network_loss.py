"""A lab host's network link cut mid-run (its veth on the lab bridge set down), with a prefork
worker as in production. Cut for 15 s, the run completes with every per-second sample: pgbench
ran on regardless, and the worker reconnected and carried on. Cut for longer than the run may
wait (BENCHLAB_HOST_UNREACHABLE_S), the run fails saying so; the host shows "cleanup pending"
and takes no run until it answers again, is cleaned up then, and takes the next run."""

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import LazySettings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs.bench.services.pending_cleanup import retry_pending_cleanups
from runs.jobs.dispatch import queue_dispatch
from runs.jobs.selectors import run_holds_its_hosts, run_wait
from runs.lab.transport.waiting import wait_until
from runs.models import Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.jobs.test_worker_death import left_on_host
from runs.tests.virtual_lab import VirtualLab
from runs.tests.waits import wait_for_samples, wait_for_state, wait_until_finished
from runs.tests.web_server import answers
from runs.tests.workers import CeleryWorker, own_worker

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
GIVE_UP_AFTER_S = 6


@contextmanager
def link_down(lab: VirtualLab, host: str) -> Iterator[None]:
    """The host's cable pulled: its veth on the lab bridge down. Afterwards, whatever happens, it
    is up again and the block ends once the host's sshd answers: right after `ip link set up` a
    connection can still be refused, and a test that connects at once would fail on that."""
    veth, address = lab.host(host)["veth"], lab.host(host)["address"]
    subprocess.run(["ip", "link", "set", veth, "down"], check=True)
    try:
        yield
    finally:
        subprocess.run(["ip", "link", "set", veth, "up"], check=True)
        assert wait_until(lambda: answers(address, 22), 30, 0.2), f"{host} does not answer after its link came up"


@pytest.fixture
def worker(settings: LazySettings) -> Iterator[CeleryWorker]:
    with own_worker(settings) as worker:
        yield worker


@pytest.fixture
def impatient_worker(settings: LazySettings) -> Iterator[CeleryWorker]:
    """A worker that waits only a few seconds for a host that stopped answering."""
    with own_worker(settings, BENCHLAB_HOST_UNREACHABLE_S=float(GIVE_UP_AFTER_S)) as worker:
        yield worker


def test_a_link_cut_for_15_s_mid_run_loses_no_sample_and_the_run_completes(
    worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab
) -> None:
    lab1 = lab_inventory["lab1"]
    run = new_run(lab1, make_user("otto", "operator"), duration_s=25, warmup_s=0)
    wait_for_state(run, RunState.MEASURING)
    wait_for_samples(run, 3)
    with link_down(virtual_lab, "lab1"):
        time.sleep(15)
    run = wait_until_finished(run, timeout=120)

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    assert list(run.samples.order_by("second").values_list("second", flat=True)) == list(range(1, 26))
    assert run.tps and run.summary["duration_s"] == 25
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    assert left_on_host(lab1, run) == {"mounted": False, "processes": [], "run_dir": False}


def test_a_host_away_past_the_limit_fails_the_run_and_is_cleaned_up_when_it_answers_again(
    impatient_worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    run = new_run(lab1, otto, duration_s=20, warmup_s=0)
    wait_for_state(run, RunState.MEASURING)
    wait_for_samples(run, 2)
    with link_down(virtual_lab, "lab1"):
        run = wait_until_finished(run, timeout=90)
        host = Host.objects.get(pk=lab1.pk)
        queued_behind = new_run(lab1, otto, duration_s=2, warmup_s=0)
        queue_dispatch()
        waiting_for = [str(wait) for wait in run_wait(queued_behind)]
        still_away = retry_pending_cleanups()
    try:
        left_after_the_failure = left_on_host(lab1, run)  # what the run could not clean up itself
    finally:
        freed = retry_pending_cleanups()  # also if the look failed: a mount left behind fails every later test
    run.refresh_from_db()
    next_run = wait_until_finished(queued_behind, timeout=90)

    assert run.state == RunState.FAILED
    assert f"was unreachable for more than {GIVE_UP_AFTER_S} s" in run.error, run.error
    assert f"cleanup pending on {lab1.name}" in run.error
    assert (host.cleanup_pending_for_id, host.claimed_by_id) == (run.pk, None)
    assert waiting_for == [f"{lab1.name} waits to be cleaned up after run {run.pk} (it could not be reached)"]
    assert still_away == [] and left_after_the_failure["mounted"]
    assert freed == [lab1.pk] and Host.objects.get(pk=lab1.pk).cleanup_pending_for_id is None
    assert f"cleaned up on {lab1.name}" in run.error and "unmounted" in run.error
    assert left_on_host(lab1, run) == {"mounted": False, "processes": [], "run_dir": False}
    assert next_run.state == RunState.DONE, (next_run.error, next_run.failed_output)


@pytest.fixture
def patient_worker(settings: LazySettings) -> Iterator[CeleryWorker]:
    """A worker whose queued runs give up on a host that does not answer after a few seconds."""
    with own_worker(settings, BENCHLAB_UNREACHABLE_FAIL_AFTER_S=float(FAIL_AFTER_S)) as worker:
        yield worker


FAIL_AFTER_S = 4


def dispatched_until(run: Run, done: Callable[[Run], bool], timeout: float) -> Run:
    """Dispatch as beat would (every 30 s there; here every 0.5 s) until done(run) holds."""

    def check() -> bool:
        queue_dispatch()
        run.refresh_from_db()
        return done(run)

    assert wait_until(check, timeout, 0.5), f"run {run.pk} still {run.state}"
    return run


def back_in_line(run: Run) -> bool:
    """Its worker sent it back: queued, not started, its hosts given back."""
    return run.state == RunState.QUEUED and run.started_at is None and not run_holds_its_hosts(run)


def test_a_run_queued_while_its_host_is_cut_off_waits_with_the_reason_and_runs_when_it_answers(
    worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab, client: Client
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    client.force_login(otto)
    with link_down(virtual_lab, "lab1"):
        run = new_run(lab1, otto, duration_s=2, warmup_s=0)
        run = dispatched_until(run, lambda r: r.transitions.filter(note__contains="did not answer").exists(), 60)
        run = dispatched_until(run, back_in_line, 30)
        host = Host.objects.get(pk=lab1.pk)
        waits = client.get(reverse("run-wait-json", args=[run.pk])).json()
        page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
        host_page = client.get(reverse("host-detail", args=[lab1.pk])).content.decode()
        note = run.transitions.get(note__contains="did not answer").note
    run = wait_until_finished(dispatched_until(run, lambda r: r.started_at is not None, 180), timeout=120)

    assert host.unreachable_since is not None and "cannot connect to root@" in host.unreachable_error
    assert waits["state"] == "queued"
    assert waits["hosts"][0]["state"].startswith(f"is unreachable since {host.unreachable_since:%Y-%m-%d}")
    assert "cannot connect to root@" in waits["waits"][0], waits
    assert "is unreachable since" in page and "did not answer" in page
    assert 'id="host-unreachable"' in host_page and "unreachable since" in host_page
    assert note.startswith(f"{lab1.name} did not answer (cannot connect to root@")
    assert run.state == RunState.DONE, (run.error, run.failed_output)
    assert list(run.transitions.values_list("state", flat=True)[:2]) == [RunState.QUEUED, RunState.QUEUED]
    assert Host.objects.filter(pk=lab1.pk, unreachable_since=None, unreachable_error="").exists()


def test_a_run_whose_host_stays_away_past_the_limit_fails_naming_the_host_since_when_and_the_error(
    patient_worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    with link_down(virtual_lab, "lab1"):
        first = new_run(lab1, otto, duration_s=2, warmup_s=0)
        behind = new_run(lab1, otto, duration_s=2, warmup_s=0)
        first = dispatched_until(first, lambda r: r.is_finished, 90)
        behind = dispatched_until(behind, lambda r: r.is_finished, 60)
        host = Host.objects.get(pk=lab1.pk)

    assert first.state == behind.state == RunState.FAILED, (first.state, behind.state)
    assert host.unreachable_since is not None
    since = timezone.localtime(host.unreachable_since).strftime("%Y-%m-%d %H:%M:%S")
    assert first.error.startswith(f"{lab1.name} has been unreachable since {since}"), first.error
    assert f"BENCHLAB_UNREACHABLE_FAIL_AFTER_S = {FAIL_AFTER_S} s); last error: cannot connect to root@" in first.error
    assert first.finished_at is not None and first.finished_at - host.unreachable_since >= timedelta(
        seconds=FAIL_AFTER_S
    )
    assert first.transitions.filter(note__contains="did not answer").exists()  # it waited first
    assert left_on_host(lab1, first) == {"mounted": False, "processes": [], "run_dir": False}
