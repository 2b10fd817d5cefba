"""A run whose worker is killed mid-measurement still stores issue 32's facts: those read before
the measured window come back from the resume record (runs/lab/benchmark/method_readings.py), the
window's end is sampled by the worker that reattached."""

import pytest

from runs.bench.services.sweeper import RUN_RECOVERY
from runs.jobs.sweeper import sweep_stale
from runs.models import Host, RunState
from runs.tests.factories import make_user
from runs.tests.jobs.test_worker_death import killed_mid_measurement, lab_inventory, prefork_worker
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory", "prefork_worker"]  # fixtures, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_reattached_run_stores_the_facts_read_before_its_worker_died(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    run = killed_mid_measurement(prefork_worker, lab1, make_user("otto", "operator"), duration_s=10)

    assert sweep_stale(RUN_RECOVERY) == [run.pk]
    run = wait_until_finished(run)

    assert run.state == RunState.DONE and run.worker.endswith("(reattached)"), (run.error, prefork_worker.log()[-3000:])
    method = run.environment["method"]
    assert method["database_bytes"] > 10 * 2**20 and method["shared_buffers_bytes"] == 32 * 2**20
    assert method["settings"]["fsync"] == "on" and method["settings"]["checkpoint_timeout_s"] == 300
    assert method["device"]["write_cache"] == "write back" and method["device"]["scheduler"]
    assert method["host"]["swappiness"] is not None and method["host"]["numa_nodes"] == 1
    during = method["during"]
    assert during["load_1m_start"] is not None  # from the dead worker's record
    assert during["load_1m_end"] is not None and isinstance(during["busiest"], list)  # from the one that reattached
