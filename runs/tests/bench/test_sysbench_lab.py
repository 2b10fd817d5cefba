"""sysbench, the second driver, end to end through a real Celery worker on the virtual lab: the
same life cycle as pgbench (storage, cluster, `sysbench prepare` followed live, a detached
measurement followed second by second, results, cleanup); a cancel mid-measurement; a worker
killed mid-measurement, its run reattached and finished with sysbench's results. One table of
1,000 rows, a few seconds each."""

import time

import pytest

from runs.bench.services.sweeper import RUN_RECOVERY
from runs.jobs.cancel import job_cancel
from runs.jobs.sweeper import sweep_stale
from runs.models import Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.jobs.test_cancel import ended_promptly
from runs.tests.jobs.test_worker_death import killed_mid_measurement, left_on_host, prefork_worker
from runs.tests.waits import wait_for_state, wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory", "prefork_worker"]  # fixtures, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
SYSBENCH = {"driver": "sysbench", "workload": "oltp_read_write", "sysbench_tables": 1, "sysbench_table_size": 1000}
NOTHING_LEFT = {"mounted": False, "processes": [], "run_dir": False}


def test_a_sysbench_run_is_measured_second_by_second_and_a_cancel_mid_measurement_leaves_nothing(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    run = wait_until_finished(new_run(lab1, otto, (), warmup_s=1, duration_s=3, **SYSBENCH))

    assert run.state == RunState.DONE, (run.error, run.failed_output, celery_worker.log()[-3000:])
    states = list(run.transitions.values_list("state", flat=True))
    assert states == ["queued", "preparing_storage", "initializing_database", "warming_up", "measuring",
                      "collecting", "cleaning_up", "done"]  # fmt: skip
    samples = list(run.samples.order_by("second"))
    # 1 s of warm-up, then 3 measured: sysbench leaves out a last report that lands on its exit (CI saw 1, 2, 3).
    assert [s.second for s in samples] in ([1, 2, 3], [1, 2, 3, 4])
    assert [s.warmup for s in samples] == [True] + [False] * (len(samples) - 1)
    assert all(s.tps > 0 and s.qps and s.qps > s.tps and s.latency_ms is None for s in samples[1:]), samples
    assert all(s.latency_p95_ms and s.latency_p95_ms > 0 for s in samples[1:])
    sysbench = run.metrics["sysbench"]
    histogram = sysbench["histogram"]
    # The measured window's alone: the warm-up's counters were reset by the report checkpoint. A
    # transaction in flight at that checkpoint may be counted on one side and timed on the other
    # (seen: 530 timed, 531 counted), so they agree within one per client; the warm-up's hundreds
    # would be far more.
    assert sysbench["transactions"] > 0
    assert abs(sum(count for _, count in histogram) - sysbench["transactions"]) <= run.clients
    assert run.tps and run.latency_avg_ms and run.latency_p50_ms and run.latency_p95_ms and run.latency_p99_ms
    assert run.latency_p50_ms <= run.latency_p95_ms <= run.latency_p99_ms <= sysbench["latency_max_ms"]
    assert sysbench["qps"] > run.tps and sysbench["reads_per_s"] > 0 and sysbench["writes_per_s"] > 0
    assert run.environment["pgbench"]["command"].startswith("sysbench oltp_read_write --db-driver=pgsql")
    assert run.environment["pgbench"]["version"].startswith("sysbench 1.")
    assert "Creating table 'sbtest1'" in run.artifacts.get(name="sysbench-init.txt").content
    assert "SQL statistics:" in run.artifacts.get(name="sysbench.stdout.txt").content
    assert run.environment["method"]["database_bytes"] > 0
    assert left_on_host(lab1, run) == NOTHING_LEFT

    cancelled = new_run(lab1, otto, (), warmup_s=0, duration_s=30, **SYSBENCH)
    wait_for_state(cancelled, RunState.MEASURING)
    deadline = time.monotonic() + 30
    while cancelled.samples.count() < 2:
        assert time.monotonic() < deadline, "no samples"
        time.sleep(0.2)
    cancelled_at = time.monotonic()
    job_cancel(cancelled, by=otto)
    took = ended_promptly(cancelled, cancelled_at)

    assert took < 15, f"sysbench went on for {took:.0f} s after the cancel"
    assert left_on_host(lab1, cancelled) == NOTHING_LEFT  # sysbench stopped by its PID, unmounted
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None


def test_a_sysbench_run_whose_worker_is_killed_mid_measurement_is_reattached_and_finished(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    run = killed_mid_measurement(prefork_worker, lab1, otto, 12, "shared_buffers = 32MB", **SYSBENCH)
    stored_offset = Run.objects.get(pk=run.pk).progress_offset  # stamped by the dead worker's heartbeat

    assert sweep_stale(RUN_RECOVERY) == [run.pk]
    run = wait_until_finished(run)

    assert run.state == RunState.DONE, (run.error, prefork_worker.log()[-3000:])
    assert run.worker.endswith("(reattached)")
    assert stored_offset > 0 and f"follows sysbench again from byte {stored_offset}" in prefork_worker.log()
    seconds = list(run.samples.order_by("second").values_list("second", flat=True))
    # Each second once, from both workers. Under CI's load (29 Nov 2026) sysbench once reported a
    # 13th interval of its 12 s run after the reattach: a second more is not a second lost or twice.
    assert seconds in (list(range(1, 13)), list(range(1, 14))), seconds
    assert run.samples.filter(qps__isnull=True).count() == 0
    sysbench = run.metrics["sysbench"]
    assert sum(count for _, count in sysbench["histogram"]) == sysbench["transactions"] > 0
    assert run.tps and run.latency_p95_ms and run.latency_p99_ms
    assert left_on_host(lab1, run) == NOTHING_LEFT
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
