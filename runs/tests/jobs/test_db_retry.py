"""with_database_retry against real broken connections: the test's own backend is terminated
by PostgreSQL (what a restart does to every client), and the write is done again on a new one;
then the worker's own writes that use it (a sample, a transition, releasing hosts)."""

import logging
from collections.abc import Callable
from typing import TypeVar

import pytest
from django.db import OperationalError, connection, connections

from runs.bench.services.samples import sample_upsert
from runs.common.db_retry import with_database_retry
from runs.jobs.dispatch import release_hosts
from runs.jobs.transitions import run_transition
from runs.models import Host, Run, RunSample, RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

T = TypeVar("T")

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def terminate_my_connection() -> None:
    """End this process's database session from another session, as a server restart does."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()


def test_a_write_on_a_connection_the_server_ended_is_done_again_on_a_new_one(caplog: pytest.LogCaptureFixture) -> None:
    host = make_host()
    terminate_my_connection()
    with pytest.raises(OperationalError):  # what an unprotected write meets
        Host.objects.filter(pk=host.pk).update(name="before")
    connection.close()
    terminate_my_connection()

    with caplog.at_level(logging.WARNING):
        updated = with_database_retry(lambda: Host.objects.filter(pk=host.pk).update(name="after"), "renaming")

    assert updated == 1 and Host.objects.get(pk=host.pk).name == "after"
    assert "renaming: benchlab's database is unreachable" in caplog.text


def test_it_gives_up_after_its_time_and_raises_the_error() -> None:
    calls = []

    def always_down() -> None:
        calls.append(1)
        raise OperationalError("connection refused")

    with pytest.raises(OperationalError, match="connection refused"):
        with_database_retry(always_down, "writing", retry_for_s=1.0)
    assert 2 <= len(calls) <= 3  # 0.5 s, then 1 s would pass the deadline


def a_measuring_run() -> Run:
    host = make_host()
    return make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING)


def test_a_sample_is_stored_on_a_new_connection_when_the_server_ended_the_old_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    run = a_measuring_run()
    terminate_my_connection()

    with caplog.at_level(logging.WARNING):
        sample_upsert(RunSample(run=run, second=1, tps=100.0, latency_ms=2.0))

    assert list(run.samples.values_list("second", "tps")) == [(1, 100.0)]
    assert f"run {run.pk}: storing second 1: benchlab's database is unreachable" in caplog.text


def test_a_transition_is_done_again_as_a_whole_on_a_new_connection(caplog: pytest.LogCaptureFixture) -> None:
    run = a_measuring_run()
    terminate_my_connection()

    with caplog.at_level(logging.WARNING):
        moved = run_transition(run=run, state=RunState.COLLECTING)

    assert moved and Run.objects.get(pk=run.pk).state == RunState.COLLECTING
    assert list(run.transitions.values_list("state", flat=True)) == [RunState.COLLECTING]
    assert "moving to collecting: benchlab's database is unreachable" in caplog.text


@pytest.mark.parametrize("state", [RunState.COLLECTING, RunState.DONE])
def test_a_transition_whose_commit_was_not_acknowledged_is_not_recorded_twice(
    monkeypatch: pytest.MonkeyPatch, state: RunState
) -> None:
    """The connection broke after COMMIT reached PostgreSQL but before its answer came back:
    the retry finds the move made (a finished run would otherwise say it did not move)."""
    run = a_measuring_run()

    def answer_lost_once(action: Callable[[], T], what: str) -> T:
        action()  # committed; its answer never arrived
        return action()

    monkeypatch.setattr("runs.jobs.transitions.with_database_retry", answer_lost_once)
    moved = run_transition(run=run, state=state)

    assert moved and run.state == state and Run.objects.get(pk=run.pk).state == state
    assert list(run.transitions.values_list("state", flat=True)) == [state]


def test_hosts_are_released_on_a_new_connection() -> None:
    run = a_measuring_run()
    Host.objects.filter(pk=run.server_host_id).update(claimed_by=run)
    terminate_my_connection()

    assert release_hosts(run) == 1
    assert Host.objects.get(pk=run.server_host_id).claimed_by_id is None
