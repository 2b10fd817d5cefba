"""Live samples: one row per run and second, a repeated second updates its row."""

import pytest

from runs.models import RunSample
from runs.services.samples import sample_upsert
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
