"""Queue order: runs start first come, first served on every host they need, a run needing two
hosts waits its turn on both and is never overtaken, and a queued run says what it waits for."""

import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from runs.bench.selectors.run_page import run_waits
from runs.bench.services.runs import runs_enqueue
from runs.inventory.services.inventory import inventory_set_flag
from runs.jobs.cancel import job_cancel
from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.jobs.selectors import run_wait
from runs.models import Host, Run, RunClient, RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.sent_tasks import record_sent_tasks
from runs.tests.workers import CeleryWorker

pytestmark = pytest.mark.django_db


def queued_run(server: Host, client: Host | None = None) -> Run:
    device, install = server.devices.get(), server.pg_installs.get()
    run = make_run(server, device, install, state=RunState.QUEUED)
    if client is not None:
        RunClient.objects.create(run=run, host=client, position=1, database="bench")
    return run


def lab_host(name: str) -> Host:
    host = make_host(name=name, address=f"10.200.0.{len(name) + Host.objects.count() + 10}")
    make_device(host)
    make_pg_install(host)
    return host


def finish(run_id: int) -> None:
    """What a worker does when a run ends: free its hosts, mark it done."""
    run = Run.objects.get(pk=run_id)
    release_hosts(run)
    Run.objects.filter(pk=run_id).update(state=RunState.DONE, finished_at=timezone.now())


def claims() -> dict[str, int | None]:
    return dict(Host.objects.values_list("name", "claimed_by_id"))


def test_runs_on_one_host_start_in_the_order_they_were_queued() -> None:
    host = lab_host("lab1")
    queued = [queued_run(host).pk for _ in range(15)]

    started = []
    for _ in queued:
        (run_id,) = queue_dispatch()  # exactly one at a time on one host
        started.append(run_id)
        finish(run_id)

    assert started == queued
    assert queue_dispatch() == []


def test_a_run_needing_two_hosts_waits_its_turn_on_both_and_is_not_overtaken() -> None:
    a, b = lab_host("lab1"), lab_host("lab2")
    on_a = queued_run(a)
    on_both = queued_run(a, client=b)
    on_b = queued_run(b)  # lab2 is free, but on_both is ahead of it there
    later_on_a = queued_run(a)

    assert queue_dispatch() == [on_a.pk]
    assert claims() == {"lab1": on_a.pk, "lab2": None}

    finish(on_a.pk)
    assert queue_dispatch() == [on_both.pk]
    assert claims() == {"lab1": on_both.pk, "lab2": on_both.pk}

    finish(on_both.pk)
    assert queue_dispatch() == [on_b.pk, later_on_a.pk]  # different hosts: both at once


def test_dispatching_again_starts_nothing_twice() -> None:
    host = lab_host("lab1")
    first, second = queued_run(host), queued_run(host)

    assert queue_dispatch() == [first.pk]
    assert queue_dispatch() == []
    assert claims() == {"lab1": first.pk} and Run.objects.get(pk=second.pk).state == RunState.QUEUED


def test_a_queued_run_says_what_it_waits_for() -> None:
    a, b = lab_host("lab1"), lab_host("lab2")
    running = queued_run(a)
    queue_dispatch()
    ahead = [queued_run(a) for _ in range(3)]
    waiting = queued_run(a, client=b)

    assert [str(wait) for wait in run_wait(waiting)] == [
        f"lab1 busy with run {running.pk}; 3 ahead of it",
        "lab2 free; first in line",
    ]
    assert [str(wait) for wait in run_wait(ahead[0])] == [f"lab1 busy with run {running.pk}"]
    assert run_wait(running) == []  # it holds its hosts: a worker is starting it


def test_a_free_host_says_which_run_is_ahead_of_it_and_what_that_run_waits_for() -> None:
    a, b = lab_host("lab1"), lab_host("lab2")
    running = queued_run(a)
    queue_dispatch()
    on_both = queued_run(a, client=b)  # waits for lab1; lab2 is free but it is first there
    on_b = queued_run(b)

    (wait,) = run_waits(on_b)

    assert (wait.host, wait.state) == ("lab2", "free")
    assert wait.queue == f"run {on_both.pk} ahead of it, waiting for lab1", (wait, running.pk)


def test_a_disabled_host_holds_its_runs_visibly_until_it_is_enabled(rf: object) -> None:
    host = lab_host("lab1")
    Host.objects.filter(pk=host.pk).update(enabled=False)
    run = queued_run(host)

    assert queue_dispatch() == []
    assert [str(wait) for wait in run_wait(run)] == ["lab1 is disabled (an admin enables it in the inventory)"]

    request = rf.post("/admin/")  # type: ignore[attr-defined]
    request.user = make_user("admin")
    inventory_set_flag(queryset=Host.objects.filter(pk=host.pk), field="enabled", value=True, request=request)
    assert queue_dispatch() == [run.pk]


def test_cancelling_a_run_that_holds_its_hosts_gives_them_to_the_next_in_line() -> None:
    host = lab_host("lab1")
    first, second = queued_run(host), queued_run(host)
    admin = make_user("boss")
    admin.is_superuser = True
    admin.save()
    assert queue_dispatch() == [first.pk]

    job_cancel(Run.objects.get(pk=first.pk), by=admin)

    assert Run.objects.get(pk=first.pk).state == RunState.CANCELLED
    assert queue_dispatch() == [second.pk]


def test_once_a_worker_has_started_a_run_a_cancel_leaves_its_hosts_to_that_worker() -> None:
    host = lab_host("lab1")
    run = queued_run(host)
    queue_dispatch()
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now())  # what execute's _mark_started does
    admin = make_user("boss")
    admin.is_superuser = True
    admin.save()

    job_cancel(Run.objects.get(pk=run.pk), by=admin)

    assert claims() == {"lab1": run.pk}  # the worker stops pgbench and cleans up first


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_dispatchers_never_give_a_host_to_two_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the claims are under test: a worker that took the runs would release their hosts.
    record_sent_tasks(monkeypatch)
    hosts = [lab_host(f"lab{i}") for i in range(3)]
    for i in range(12):
        queued_run(hosts[i % 3], client=hosts[(i + 1) % 3] if i % 4 == 0 else None)
    started: list[int] = []
    lock = threading.Lock()

    def dispatch() -> None:
        try:
            ids = queue_dispatch()
            with lock:
                started.extend(ids)
        finally:
            connection.close()

    threads = [threading.Thread(target=dispatch) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(started) == len(set(started))
    holders = [pk for pk in claims().values() if pk is not None]
    assert sorted(set(holders)) == sorted(started)
    for run in Run.objects.filter(pk__in=started):
        assert all(host.claimed_by_id == run.pk for host in Host.objects.filter(pk__in=[h.pk for h in run.hosts]))


def wait_until_all_finished(run_ids: list[int], worker: CeleryWorker, timeout: float = 90) -> list[Run]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(pk__in=run_ids).order_by("pk"))
        if all(run.is_finished for run in runs):
            return runs
        time.sleep(0.2)
    states = [(r.pk, r.state) for r in runs]
    raise AssertionError(f"not finished within {timeout} s: {states}, hosts {claims()}\n{worker.log()[-6000:]}")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_real_worker_starts_runs_in_queue_order_on_every_host(celery_worker: CeleryWorker) -> None:
    # Hosts that refuse the connection at once (nothing listens on port 1 of loopback): each run
    # claims, fails fast and releases, so many runs pass through the queue in seconds.
    a, b = (
        make_host(name=name, address="127.0.0.1", ssh_port=1, allow_runs_on_benchlab_server=True)
        for name in ("lab1", "lab2")
    )
    for host in (a, b):
        make_device(host)
        make_pg_install(host)
    plan = [(a, None), (a, b), (b, None), (a, None), (b, a), (b, None), (a, None), (a, b), (b, None), (a, None)]
    runs = [
        Run(server_host=server, device=server.devices.get(), pg_install=server.pg_installs.get()) for server, _ in plan
    ]
    runs_enqueue(
        runs=runs, client_host_ids=[[c.pk] if c else [] for _, c in plan]
    )  # one transaction; its commit dispatches

    finished = wait_until_all_finished([run.pk for run in runs], celery_worker)

    assert all(run.state == RunState.FAILED and run.started_at for run in finished), [r.error for r in finished]
    for host in (a, b):
        using = [run for run in finished if host.pk in {h.pk for h in run.hosts}]
        by_start = sorted(using, key=lambda run: (run.started_at, run.pk))
        assert [run.pk for run in by_start] == [run.pk for run in using], f"{host.name} started out of order"
    assert set(claims().values()) == {None}


def test_a_run_a_worker_has_started_is_never_dispatched_again() -> None:
    # A run that fails before its first step is still "queued" (with its start stamped) for a
    # moment after releasing its hosts; a dispatch then must not hand it out a second time.
    host = lab_host("lab1")
    run = queued_run(host)
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now())

    assert queue_dispatch() == []
    assert claims() == {"lab1": None}
