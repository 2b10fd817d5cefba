"""Live samples: one row per run and second, a repeated second updates its row."""

import pytest
from django.db import connections

from runs.bench.services.samples import client_sample_upsert, sample_upsert
from runs.models import RunClient, RunClientSample, RunSample
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db


def test_a_sample_seen_twice_updates_its_row() -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host))

    sample_upsert(RunSample(run=run, second=1, tps=100.0, latency_ms=2.0, warmup=True))
    sample_upsert(RunSample(run=run, second=2, tps=150.0, latency_ms=1.5))
    sample_upsert(RunSample(run=run, second=1, tps=110.0, latency_ms=1.8, failed=3, warmup=False))

    rows = list(run.samples.order_by("second").values_list("second", "tps", "latency_ms", "failed", "warmup"))
    assert rows == [(1, 110.0, 1.8, 3, False), (2, 150.0, 1.5, None, False)]


def test_every_value_of_a_sample_is_stored_and_replaced_by_a_repeat() -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host))
    values = ("tps", "latency_ms", "latency_stddev_ms", "failed", "lag_ms", "skipped", "warmup")

    sample_upsert(RunSample(run=run, second=7, tps=1.0, latency_ms=2.0, latency_stddev_ms=3.0, failed=4,
                            lag_ms=5.0, skipped=6, warmup=True))  # fmt: skip
    first = run.samples.values_list(*values).get()
    sample_upsert(RunSample(run=run, second=7, tps=10.0, latency_ms=20.0))

    assert first == (1.0, 2.0, 3.0, 4, 5.0, 6, True)
    assert run.samples.values_list(*values).get() == (10.0, 20.0, None, None, None, None, False)


def test_a_client_hosts_sample_seen_twice_updates_its_row() -> None:
    host, client = make_host(), make_host(name="lab2", address="10.200.0.12")
    run = make_run(host, make_device(host), make_pg_install(host), client_host=client)
    run_client = RunClient.objects.get(run=run)

    client_sample_upsert(run_client.pk, 1, 100.0, 2.0)
    client_sample_upsert(run_client.pk, 2, 150.0, 1.5)
    client_sample_upsert(run_client.pk, 1, 110.0, 1.8)

    rows = RunClientSample.objects.filter(run_client=run_client).values_list("second", "tps", "latency_ms")
    assert list(rows) == [(1, 110.0, 1.8), (2, 150.0, 1.5)]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_sample_is_committed_by_the_time_it_is_stored() -> None:
    """Another connection (the run's page, a worker that takes the run over) sees it at once:
    the worker publishes it next, and a viewer that misses the event reads it from here."""
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host))

    sample_upsert(RunSample(run=run, second=1, tps=100.0, latency_ms=2.0))

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT second, tps FROM runs_runsample WHERE run_id = %s", [run.pk])
            assert cursor.fetchall() == [(1, 100.0)]
    finally:
        other.close()
