"""A separate warm-up run (seed 004) through a real worker on the virtual lab: pgbench with its own
clients and seconds in the run's cluster, right before the measurement, its seconds kept apart from
the results; a cancel during it stops it; a worker that dies during it fails the run saying so."""

import os
import shlex
import signal
import time

import pytest

from runs.bench.services.sweeper import RUN_RECOVERY
from runs.jobs import live
from runs.jobs.cancel import job_cancel
from runs.jobs.sweeper import sweep_stale
from runs.models import Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.jobs.test_worker_death import left_on_host, prefork_worker
from runs.tests.waits import wait_for_state, wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory", "prefork_worker"]  # fixtures, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _option(command: str, flag: str) -> str:
    argv = shlex.split(command)
    return argv[argv.index(flag) + 1]


def _warmup_seconds(run: Run, at_least: int, timeout_s: float = 40) -> None:
    deadline = time.monotonic() + timeout_s
    while run.warmup_samples.count() < at_least:
        assert time.monotonic() < deadline, "no warm-up seconds"
        time.sleep(0.2)


def test_a_warm_up_run_with_its_own_clients_runs_in_the_same_cluster_before_the_measurement(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    run = new_run(lab_inventory["lab1"], make_user("otto", "operator"), workload="select-only", clients=2,
                  duration_s=3, warmup_s=0, warmup_run_s=3, warmup_run_clients=1)  # fmt: skip
    run = wait_until_finished(run)

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    states = list(run.transitions.values_list("state", flat=True))
    assert states.index("warming_up") + 1 == states.index("measuring"), states
    warmup, measured = run.environment["warmup_run"], run.environment["pgbench"]
    assert (warmup["clients"], warmup["duration_s"], warmup["exit_status"]) == (1, 3, 0), warmup
    assert (_option(warmup["command"], "-c"), _option(measured["command"], "-c")) == ("1", "2")
    assert (_option(warmup["command"], "-T"), _option(measured["command"], "-T")) == ("3", "3")
    assert _option(warmup["command"], "-b") == "select-only"
    # The same cluster: the same socket directory and port.
    for flag in ("-h", "-p"):
        assert _option(warmup["command"], flag) == _option(measured["command"], flag)
    assert warmup["started_epoch"] + 3 <= measured["started_epoch"], (warmup, measured)
    assert warmup["tps"] and warmup["tps"] > 0 and run.environment["stages"]["warm-up run"] >= 3
    # Its seconds are its own series; the measurement's are the measured window only.
    assert run.warmup_samples.count() >= 2 and run.samples.count() <= 3
    assert not run.samples.filter(warmup=True).exists()
    # The statistics count the measurement's transactions, not the warm-up's too.
    committed = run.metrics["pg_stats"]["transactions_committed"]
    processed = run.summary["transactions_processed"]
    assert processed <= committed < processed + warmup["tps"] * 1.5, (committed, processed, warmup["tps"])
    events = live.events_after(live.run_stream(run.pk))
    assert [e.data["second"] for e in events if e.kind == "warmup_sample"] == list(
        run.warmup_samples.order_by("second").values_list("second", flat=True)
    )


def test_a_cancel_during_the_warm_up_run_stops_it_and_measures_nothing(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    otto = make_user("otto", "operator")
    run = new_run(lab_inventory["lab2"], otto, duration_s=30, warmup_s=0, warmup_run_s=60)
    wait_for_state(run, RunState.WARMING_UP)
    _warmup_seconds(run, 1)

    job_cancel(run, by=otto)
    run = wait_until_finished(run, timeout=60)

    assert run.state == RunState.CANCELLED, (run.error, run.failed_output)
    assert run.finished_at and run.started_at and (run.finished_at - run.started_at).total_seconds() < 50
    assert "measuring" not in run.transitions.values_list("state", flat=True)
    assert run.samples.count() == 0 and run.warmup_samples.count() >= 1
    assert left_on_host(lab_inventory["lab2"], run) == {"mounted": False, "processes": [], "run_dir": False}
    assert Host.objects.get(pk=run.server_host_id).claimed_by_id is None


def test_a_worker_that_dies_in_the_warm_up_run_fails_the_run_saying_so_and_it_is_cleaned_up(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    run = new_run(lab1, make_user("otto", "operator"), duration_s=3, warmup_s=0, warmup_run_s=30)
    wait_for_state(run, RunState.WARMING_UP)
    _warmup_seconds(run, 2)
    for pid in prefork_worker.pool_pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(5)

    handed_over = sweep_stale(RUN_RECOVERY)
    run = wait_until_finished(run, timeout=60)

    assert handed_over == [run.pk]
    assert (run.state, run.failed_step) == (RunState.FAILED, RunState.WARMING_UP), prefork_worker.log()[-3000:]
    assert "the measurement never started (its worker died in the warm-up run on " in run.error, run.error
    assert f"cleaned up on {lab1.name}: stopped the run user's processes" in run.error
    assert left_on_host(lab1, run) == {"mounted": False, "processes": [], "run_dir": False}
    assert run.samples.count() == 0
