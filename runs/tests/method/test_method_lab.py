"""The method labels of a real run through the worker on the virtual lab: a small database on the
RAM disk with small shared_buffers fits in RAM, and ext4 mounted with barrier=0 is not durable; and
the host's tuning and activity as its probe read them."""

import os
from datetime import datetime
from pathlib import Path

import pytest

from runs.method.outcome import Status
from runs.method.run_checks import BUSY_PROCESS_PCT
from runs.method.selectors import run_method
from runs.models import Host, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
__all__ = ["lab_inventory"]  # a fixture


def test_a_small_run_on_the_ram_disk_fits_in_ram_and_barrier_0_is_not_durable_and_the_probe_read_the_host(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    queued = new_run(
        lab_inventory["lab1"], make_user("otto", "operator"), scale=2, mount_options="barrier=0",
        pg_settings="shared_buffers = 16MB",
    )  # fmt: skip

    run = wait_until_finished(queued)

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    assert (run.memory_tier, run.durable) == ("fits in RAM", False)
    method = run.environment["method"]
    assert 2 * 15 * 2**20 <= method["database_bytes"] <= 2 * 20 * 2**20  # scale 2: about 30 MiB of tables and indexes
    assert method["shared_buffers_bytes"] == 16 * 2**20
    checks = {check.key: check for check in run_method(run)}
    assert checks["memory"].status == Status.WARNING and checks["memory"].reason.startswith("fits in RAM: database")
    # As mounted, ext4 says barrier=0 as "nobarrier"; the RAM disk's loop device has a write-back cache.
    assert checks["durability"].reason == (
        "not durable: mounted with nobarrier; the device's write cache is volatile (write back) and nothing flushes it"
    )
    assert checks["checkpoints"].status == Status.PASSED  # counted, none forced
    # The probe lab_register made over SSH (as an admin's "Probe now" does) read the host as it was then.
    lab1 = lab_inventory["lab1"]
    now = lab1.facts["now"]
    assert lab1.probed_at is not None
    read_at = datetime.fromisoformat(now["read_at"])
    assert abs((read_at - lab1.probed_at).total_seconds()) < 30
    # The lab's hosts share this machine's kernel: its settings are theirs.
    assert now["host"]["swappiness"] == int(Path("/proc/sys/vm/swappiness").read_text())
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    assert now["host"]["thp"] is not None and f"[{now['host']['thp']}]" in thp
    assert now["during"]["cpu_count"] == os.cpu_count() and now["during"]["load_1m_start"] is not None
    # The host's own process table, where benchlab's SSH session serving the probe (4-12 % of a CPU over
    # the probe's reads, measured before it was left out) is benchlab's own, not another process.
    busiest = now["during"]["busiest"]
    assert isinstance(busiest, list) and "sshd" not in {p["command"] for p in busiest}, busiest
    assert not [p for p in busiest if p["cpu_pct"] >= BUSY_PROCESS_PCT], busiest
