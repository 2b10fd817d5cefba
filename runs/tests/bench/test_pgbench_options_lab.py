"""pgbench's storage options and latency limit on the virtual lab, through a real Celery worker:
a partitioned database, and a rate the 2-core machine cannot hold with a 1 ms latency limit, so
pgbench both skips and reports late transactions, and the run's per-second series adds up to them."""

import pytest

from runs.models import Host, RunState
from runs.tests.bench.test_run_execution import lab_inventory as lab_inventory  # a fixture
from runs.tests.bench.test_run_execution import new_run
from runs.tests.factories import make_user
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_partitioned_rate_limited_run_counts_skipped_and_late_transactions(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    # 2 clients manage some 1,000-1,500 tps here at ~1 ms: 2,000 tps cannot be held, so the
    # schedule falls behind (skipped) and many finish above 1 ms (late).
    run = new_run(lab_inventory["lab1"], make_user("otto", "operator"), partitions=4, partition_method="hash",
                  fillfactor=90, unlogged_tables=True, rate_limit_tps=2000, latency_limit_ms=1, duration_s=3,
                  warmup_s=0)  # fmt: skip
    run = wait_until_finished(run)

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    summary, seconds = run.summary, run.metrics["latency_seconds"]
    assert (summary["partitions"], summary["partition_method"]) == (4, "hash")
    init = run.environment["init_command"]
    assert "--partitions=4 --partition-method=hash" in init and "--fillfactor=90 " in init, init
    assert "--unlogged-tables" in init
    assert "-R 2000 --latency-limit=1 " in run.environment["pgbench"]["command"]
    assert summary["latency_limit_ms"] == 1.0
    assert run.skipped_transactions and run.skipped_transactions > 0, summary
    assert summary["above_latency_limit"] > 0, summary
    # The per-second series is read from the per-transaction log of the same transactions.
    assert sum(s["skipped"] for s in seconds) == run.skipped_transactions
    assert sum(s["late"] for s in seconds) == summary["above_latency_limit"]
    assert sum(s["completed"] for s in seconds) == summary["transactions_processed"]
    print(f"tps {run.tps:.0f}, skipped {run.skipped_transactions}, late {summary['above_latency_limit']}"
          f" of {summary['transactions_processed']}, {len(seconds)} seconds")  # fmt: skip
