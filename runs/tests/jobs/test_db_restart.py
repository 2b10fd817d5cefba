"""benchlab's own PostgreSQL restarted mid-run, as the run's worker sees it: every connection it
has is ended by the server, and new ones are refused for a few seconds. The worker retries its
writes (common.db_retry) and the run completes with every per-second sample: pgbench runs
detached on the lab host and its output waits in a file while the worker waits for the database.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.conf import LazySettings
from django.db import connection
from django.utils import timezone

from runs.models import Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.waits import wait_for_samples, wait_for_state, wait_until_finished
from runs.tests.workers import CeleryWorker, own_worker

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
DOWN_FOR_S = 5.0
RETRY_WARNING = "benchlab's database is unreachable"


@pytest.fixture
def prefork_worker(settings: LazySettings) -> Iterator[CeleryWorker]:
    """A prefork worker of one pool process (as in production), beating every second so that
    its heartbeat meets the restart too."""
    with own_worker(settings, BENCHLAB_HEARTBEAT_EVERY_S=1.0) as worker:
        yield worker


@contextmanager
def connections_refused() -> Iterator[None]:
    """New connections to the test database are refused until the block ends, and always
    allowed again after it. A database cannot refuse connections to itself from a session of
    its own, so this is said from the maintenance database `postgres` (the test role owns the
    test database: it may)."""
    name = connection.ops.quote_name(connection.settings_dict["NAME"])
    maintenance = connection.get_new_connection(connection.get_connection_params() | {"dbname": "postgres"})
    maintenance.autocommit = True
    try:
        maintenance.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        try:
            yield
        finally:
            maintenance.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
    finally:
        maintenance.close()


def end_every_other_session() -> int:
    """What a restart does to every client of the database but this test's own session; how many."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        (ended,) = cursor.fetchone()
    return int(ended)


def test_a_run_goes_through_a_restart_of_benchlabs_database_with_every_sample(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    run = new_run(lab1, make_user("otto", "operator"), duration_s=12, warmup_s=0)
    wait_for_state(run, RunState.MEASURING)
    wait_for_samples(run, 3)

    with connections_refused():
        ended = end_every_other_session()
        before = run.samples.count()  # no session of the worker's is left to add one
        time.sleep(DOWN_FOR_S)
        during = run.samples.count()
        state_when_back = Run.objects.get(pk=run.pk).state
    back_at = timezone.now()
    run = wait_until_finished(run, timeout=90)

    log = prefork_worker.log()
    assert ended >= 1  # the worker's sessions (its run, its heartbeat, its cancel watch)
    assert during == before and state_when_back == RunState.MEASURING  # it met the restart mid-measurement
    assert run.state == RunState.DONE, (run.error, log[-3000:])
    seconds = list(run.samples.order_by("second").values_list("second", flat=True))
    assert seconds == list(range(1, len(seconds) + 1)) and len(seconds) >= 11, seconds
    states = list(run.transitions.values_list("state", flat=True))
    assert states == ["queued", "preparing_storage", "initializing_database", "measuring", "collecting",
                      "cleaning_up", "done"]  # fmt: skip
    assert run.tps and run.tps > 0 and run.summary["transactions_processed"] > 0 and run.steady_tps_mean
    assert run.os_means["vmstat"]["us"] is not None and run.os_series.filter(source="vmstat").exists()
    assert {a.name for a in run.artifacts.all()} >= {"pgbench.stdout.txt", "pgbench.stderr.txt"}
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    assert run.heartbeat_at is not None and run.heartbeat_at > back_at  # its heartbeat came back too
    assert f"run {run.pk}: storing second" in log and RETRY_WARNING in log, log[-3000:]
