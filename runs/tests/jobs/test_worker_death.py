"""A worker killed mid-measurement (SIGKILL, a prefork pool process as in production): the run
must not stay "measuring" nor hold its host. The sweeper finds it by its silent heartbeat and
sends it to a worker, which reattaches to pgbench (still running on the lab host) and finishes
the run with every sample; if the run's files are gone from the host, the run fails saying so,
what is left is removed, and the host takes the next run."""

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import LazySettings
from django.contrib.auth.models import User

from runs.bench.services.lab_specs import benchmark_spec
from runs.bench.services.sweeper import RUN_RECOVERY
from runs.inventory.services.connect import host_connect
from runs.jobs import live
from runs.jobs.sweeper import sweep_stale
from runs.lab.benchmark.run import run_dir_for
from runs.lab.host.run_user import RUN_USER
from runs.lab.storage.mounts import MOUNT_ROOT
from runs.models import DeviceHealthReading, HealthSource, Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.waits import wait_for_state, wait_until_finished
from runs.tests.workers import CeleryWorker, own_worker

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def prefork_worker(settings: LazySettings) -> Iterator[CeleryWorker]:
    """A prefork worker of one pool process, beating every second; silent for 4 s is dead."""
    with own_worker(settings, BENCHLAB_HEARTBEAT_EVERY_S=1.0, BENCHLAB_STALE_AFTER_S=4.0) as worker:
        yield worker


def left_on_host(host: Host, run: Run) -> dict[str, Any]:
    transport = host_connect(host)
    try:
        run_key = benchmark_spec(run).run_key
        mounts = transport.run(["cat", "/proc/mounts"]).stdout
        processes = transport.run(["pgrep", "-u", RUN_USER], check=False).stdout.split()
        run_dir = transport.run(["test", "-e", run_dir_for(run_key)], check=False).exit_status == 0
        return {"mounted": f"{MOUNT_ROOT}/benchlab-{run_key}" in mounts, "processes": processes, "run_dir": run_dir}
    finally:
        transport.close()


def killed_mid_measurement(
    worker: CeleryWorker,
    host: Host,
    user: User,
    duration_s: int,
    pg_settings: str = "shared_buffers = 32MB",
    **fields: object,
) -> Run:
    """A run measuring for a few seconds when its worker's pool process is SIGKILLed, and silent
    for longer than the 4 s after which a run counts as abandoned."""
    run = new_run(host, user, (), duration_s=duration_s, warmup_s=0, pg_settings=pg_settings, **fields)
    wait_for_state(run, RunState.MEASURING)
    deadline = time.monotonic() + 30
    while run.samples.count() < 3:
        assert time.monotonic() < deadline, "no samples"
        time.sleep(0.2)
    for pid in worker.pool_pids():  # the pool process running it, by its PID
        os.kill(pid, signal.SIGKILL)
    time.sleep(5)
    run.refresh_from_db()
    assert (run.state, Host.objects.get(pk=host.pk).claimed_by_id) == (RunState.MEASURING, run.pk)  # stuck
    return run


def test_a_run_whose_worker_is_killed_mid_measurement_is_reattached_and_finished_with_every_sample(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    # A tiny max_wal_size: a WAL checkpoint every 1-4 s (by the machine's load), before the worker
    # dies and after; 16 s leave several after the reattach, which comes about 9 s in.
    wal_checkpoints = "shared_buffers = 32MB\nmax_wal_size = 32MB\nmin_wal_size = 32MB"
    run = killed_mid_measurement(prefork_worker, lab1, otto, duration_s=16, pg_settings=wal_checkpoints)
    while_measuring = left_on_host(lab1, run)
    stored_offset = Run.objects.get(pk=run.pk).progress_offset  # stamped by the dead worker's heartbeat

    handed_over_epoch = time.time()
    handed_over = sweep_stale(RUN_RECOVERY)
    again = sweep_stale(RUN_RECOVERY)
    run = wait_until_finished(run)
    after = left_on_host(lab1, run)
    following = wait_until_finished(new_run(lab1, otto))

    assert while_measuring["mounted"] and while_measuring["processes"] and while_measuring["run_dir"]
    assert handed_over == [run.pk] and again == []  # its heartbeat, stamped, keeps other sweepers off
    assert run.state == RunState.DONE, (run.error, prefork_worker.log()[-3000:])
    assert run.worker.endswith("(reattached)")
    # It followed on from where the dead worker had got to, not from pgbench's first line.
    assert stored_offset > 0 and f"follows pgbench again from byte {stored_offset}" in prefork_worker.log()
    seconds = list(run.samples.order_by("second").values_list("second", flat=True))
    assert seconds == list(range(1, len(seconds) + 1)) and len(seconds) >= 15, seconds
    assert run.tps and run.tps > 0 and run.summary["transactions_processed"] > 0
    assert run.environment["pgbench"]["command"].startswith(run.pg_install.bin_dir)
    assert run.environment["postgresql"]["version"].startswith("PostgreSQL")
    assert run.artifacts.get(name="pgbench.stderr.txt").content and run.os_means["vmstat"]["us"] is not None
    assert after == {"mounted": False, "processes": [], "run_dir": False}
    # The device's health, read by the reattached worker's collect (stages.read_health_after_window):
    # the lab's disks are loop devices, without SMART.
    (health,) = DeviceHealthReading.objects.filter(run=run, source=HealthSource.RUN)
    assert health.none_reason.startswith(("no SMART data: ", "smartctl is not installed on")), health.none_reason
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    assert following.state == RunState.DONE, (following.error, prefork_worker.log()[-3000:])
    # The checkpoints: stored from the whole window (the reattached worker read the log), and told
    # live after the reattach too (its follower of the server log).
    checkpoints = run.environment["method"]["checkpoints"]
    # The lab's hosts share this machine's clock: the second of the window the reattach came at.
    reattached_at = handed_over_epoch - run.environment["pgbench"]["started_epoch"]
    assert checkpoints["requested"] >= 1 and checkpoints["events"], checkpoints
    stored = sorted(event["second"] for event in checkpoints["events"])
    assert stored[0] < reattached_at < stored[-1], (stored, reattached_at)  # before the new worker: from the log
    told = [e.data for e in live.events_after(live.run_stream(run.pk)) if e.kind == "checkpoint"]
    assert {event["kind"] for event in told} == {"wal"}, told
    assert any(event["second"] > reattached_at for event in told), (told, reattached_at)  # by the new worker


def test_a_run_whose_files_are_gone_from_the_host_fails_saying_so_and_is_cleaned_up(
    prefork_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    run = killed_mid_measurement(prefork_worker, lab1, otto, duration_s=30)
    transport = host_connect(lab1)
    try:
        transport.run(["rm", "-rf", "--", run_dir_for(benchmark_spec(run).run_key)])
    finally:
        transport.close()

    handed_over = sweep_stale(RUN_RECOVERY)
    run = wait_until_finished(run, timeout=60)
    after = left_on_host(lab1, run)

    assert handed_over == [run.pk]
    assert run.state == RunState.FAILED and run.failed_step == RunState.MEASURING, prefork_worker.log()[-3000:]
    assert run.error.startswith("its worker stopped while measuring, and reattaching failed: the run's files are gone")
    assert f"cleaned up on {lab1.name}: stopped the run user's processes" in run.error and "unmounted" in run.error
    assert after == {"mounted": False, "processes": [], "run_dir": False}
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    assert run.samples.count() >= 3  # what it measured before its worker died stays
