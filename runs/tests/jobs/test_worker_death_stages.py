"""A worker killed (SIGKILL of its prefork pool process) in each stage of a run, on the virtual
lab: the run ends done with every sample, or failed with the reason, and the host is left clean
either way; a finished measurement is never thrown away.

Each kill lands in its stage deterministically: the test watches the run's recorded state (the
worker records each step before doing it) and kills the pool process as soon as it appears; the
state the run is left in afterwards (its worker dead, nothing moves it) proves where it died.
"""

import os
import signal
import time
from typing import Any

import pytest

from runs.bench.services.sweeper import RUN_RECOVERY
from runs.inventory.services.connect import host_connect
from runs.jobs.sweeper import sweep_stale
from runs.models import DeviceHealthReading, HealthSource, Host, Run, RunState
from runs.tests.bench.test_run_execution import new_run
from runs.tests.factories import make_user
from runs.tests.jobs.test_worker_death import lab_inventory, left_on_host, prefork_worker
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory", "prefork_worker"]  # fixtures, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
DURATION_S = 4


def kill_in(worker: CeleryWorker, run: Run, state: RunState, timeout: float = 120) -> RunState:
    """SIGKILL the worker's pool process as soon as the run is recorded in `state` (measuring:
    once pgbench has reported a second); the state the run is left in once its worker is dead."""
    rows = Run.objects.filter(pk=run.pk).values_list("state", flat=True)
    deadline = time.monotonic() + timeout

    def there(now: str) -> bool:
        return now == state and (state != RunState.MEASURING or run.samples.exists())

    while not there(now := rows.get()):
        assert time.monotonic() < deadline and now not in (RunState.DONE, RunState.FAILED), (now, worker.log()[-3000:])
        time.sleep(0.005)
    for pid in worker.pool_pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(5)  # silent for longer than the 4 s after which its run counts as abandoned
    return RunState(rows.get())


def device_in_use(host: Host, run: Run) -> list[str]:
    """The lines of the host's mount table that name the run's device (its loop device)."""
    transport = host_connect(host)
    try:
        node = transport.run(["readlink", "-f", run.device.path]).stdout.strip()
        return [line for line in transport.run(["cat", "/proc/mounts"]).stdout.splitlines() if line.split()[0] == node]
    finally:
        transport.close()


def every_second(run: Run) -> list[int]:
    return list(run.samples.order_by("second").values_list("second", flat=True))


CLEAN = {"mounted": False, "processes": [], "run_dir": False}


@pytest.mark.parametrize(
    ("stage", "ends"),
    [
        (RunState.PREPARING_STORAGE, RunState.FAILED),
        (RunState.INITIALIZING_DATABASE, RunState.FAILED),
        (RunState.MEASURING, RunState.DONE),
        (RunState.COLLECTING, RunState.DONE),
        (RunState.CLEANING_UP, RunState.DONE),
    ],
)
def test_a_worker_killed_in_any_stage_leaves_a_finished_run_or_a_failed_one_and_a_clean_host(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host], stage: RunState, ends: RunState
) -> None:
    lab1 = lab_inventory["lab1"]
    run = new_run(lab1, make_user("otto", "operator"), duration_s=DURATION_S, warmup_s=0)
    died_in = kill_in(prefork_worker, run, stage)
    stored_before_sweep = Run.objects.get(pk=run.pk).results_stored_at

    sweep_stale(RUN_RECOVERY)
    run = wait_until_finished(run, timeout=90)
    left: dict[str, Any] = left_on_host(lab1, run)

    assert died_in == stage
    assert (run.state, run.failed_step) == (ends, stage if ends == RunState.FAILED else ""), (
        run.error,
        prefork_worker.log()[-3000:],
    )
    assert left == CLEAN and device_in_use(lab1, run) == []
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    if ends == RunState.FAILED:  # before pgbench: nothing was measured
        assert run.error.startswith(f"the worker running it stopped while {stage.label} (no sign of life since ")
        assert f"cleaned up on {lab1.name}:" in run.error and run.samples.count() == 0
        return
    # Every second pgbench measured, and its results, whichever worker collected them.
    assert every_second(run) == list(range(1, DURATION_S + 1)), every_second(run)
    assert run.tps and run.tps > 0 and run.summary["transactions_processed"] > 0 and run.results_stored_at
    assert run.artifacts.get(name="pgbench.stderr.txt").content and run.os_means["vmstat"]["us"] is not None
    assert run.environment["postgresql"]["version"].startswith("PostgreSQL")
    if stage == RunState.CLEANING_UP:  # stored by the worker that died; the sweeper cleaned up after it
        assert stored_before_sweep is not None and not run.worker.endswith("(reattached)")
        assert run.error.startswith("the worker running it stopped while cleaning up (no sign of life since ")
        assert ", after its results were stored; " in run.error and f"cleaned up on {lab1.name}:" in run.error
    else:  # another worker followed pgbench again (it had ended meanwhile) and collected
        assert stored_before_sweep is None and run.worker.endswith("(reattached)"), run.worker
        assert run.error == ""


def test_a_run_on_two_client_hosts_whose_worker_is_killed_mid_measurement_is_reattached_and_finished(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1, lab2, lab3 = (lab_inventory[name] for name in ("lab1", "lab2", "lab3"))
    run = new_run(lab1, make_user("otto", "operator"), client_hosts=(lab2, lab3), duration_s=8, warmup_s=0)
    died_in = kill_in(prefork_worker, run, RunState.MEASURING)

    sweep_stale(RUN_RECOVERY)
    run = wait_until_finished(run, timeout=90)

    assert died_in == RunState.MEASURING
    assert run.state == RunState.DONE, (run.error, prefork_worker.log()[-3000:])
    assert run.worker.endswith("(reattached)")
    assert "follows pgbench again on each client host from its start" in prefork_worker.log()
    assert every_second(run) == list(range(1, 9)), every_second(run)
    clients = list(run.run_clients.order_by("host__name"))
    for client in clients:  # each client host's own seconds, and its figures
        seconds = list(client.samples.order_by("second").values_list("second", flat=True))
        assert seconds == list(range(1, 9)), (client.host.name, seconds)
        assert client.tps and client.tps > 0 and client.exit_status == 0 and client.command.endswith(client.database)
    # Combined as the first worker would have: throughput summed, both clients' outputs kept.
    assert run.tps == pytest.approx(sum(client.tps for client in clients))
    assert run.summary["clients"] == 4 and run.start_skew_ms is not None
    outputs = {f"pgbench.{lab2.name}.stdout.txt", f"pgbench.{lab3.name}.stderr.txt"}
    assert {a.name for a in run.artifacts.all()} >= outputs
    # Each client host's window: its start from the dead worker's resume record, its end sampled by the other.
    during = run.environment["method"]["during_clients"]
    assert set(during) == {lab2.name, lab3.name}, during
    assert all(d["load_1m_start"] is not None and isinstance(d["busiest"], list) for d in during.values()), during
    # The server's device's health, read by the reattached worker (stages.read_health_after_window).
    assert DeviceHealthReading.objects.filter(run=run, source=HealthSource.RUN, device=run.device).count() == 1
    for host in (lab1, lab2, lab3):
        assert left_on_host(host, run) == CLEAN, host.name
    assert (
        list(Host.objects.filter(pk__in=[lab1.pk, lab2.pk, lab3.pk]).values_list("claimed_by_id", flat=True))
        == [None] * 3
    )
