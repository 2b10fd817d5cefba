"""The benchmarks' own code, run tiny: a benchmark that no longer runs is found by the suite,
not by the next `make bench`."""

import json
import os
import subprocess
import sys

import pytest

from benchmarks import ingest
from runs.models import RunSample
from runs.tests.workers import database_url_for_tests


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the runs' processes read the runs
def test_the_ingest_step_counts_every_sample_its_runs_stored_and_forwarded() -> None:
    # In a process of its own, as `make bench` runs it: the step forks its runs, and a fork of
    # this process would inherit the Celery connections earlier tests opened (kombu's after-fork
    # cleanup then waits on the parent's socket for ever).
    step = "import json, benchmarks.ingest as i; print(json.dumps(i.step(runs=2, rate_per_run=20.0, duration_s=1.0)))"
    env = os.environ | {"DATABASE_URL": database_url_for_tests()}
    done = subprocess.run([sys.executable, "-c", step], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])

    assert figures["due"] == 40 and figures["workers_failed"] == 0
    assert figures["lost"] == 0 and figures["stored_per_s"] == figures["forwarded_per_s"] == 40.0
    assert figures["lag_ms"] is not None and figures["lag_ms"]["p50"] <= figures["lag_ms"]["max"]
    assert RunSample.objects.count() == 40


def test_the_ingest_steps_add_runs_up_to_the_limit_then_speed_them_up() -> None:
    assert ingest.runs_and_rate(250, base_rate_per_run=50, max_runs=40) == (5, 50.0)
    assert ingest.runs_and_rate(2000, base_rate_per_run=50, max_runs=40) == (40, 50.0)
    assert ingest.runs_and_rate(4000, base_rate_per_run=50, max_runs=40) == (40, 100.0)


def test_an_ingest_step_with_a_lost_or_late_sample_is_not_sustained() -> None:
    lag_ms = {"p50": 10.0, "p95": 20.0, "p99": 30.0, "max": 900.0}
    assert ingest.sustained({"lost": 0, "lag_ms": lag_ms})
    assert not ingest.sustained({"lost": 1, "lag_ms": lag_ms})
    assert not ingest.sustained({"lost": 0, "lag_ms": lag_ms | {"max": 1001.0}})
    assert not ingest.sustained({"lost": 0, "lag_ms": None})  # nothing arrived at all
