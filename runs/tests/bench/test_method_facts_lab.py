"""A real run on the virtual lab's RAM disk records issue 32's facts (environment["method"]):
its database's size, shared_buffers as the server runs it, durability settings, the device's
queue and the host's tuning as this machine's sysfs says (the lab's hosts share its kernel),
and what else ran during the measured window: a CPU burner started on the host beside it is
named, the run's own postgres, pgbench and collectors are not."""

import os
from pathlib import Path

import pytest

from runs.inventory.services.connect import host_connect
from runs.lab.host.run_user import process_alive
from runs.lab.transport.process import cancel, start_detached
from runs.models import Host, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
OWN_COMMANDS = {"postgres", "pgbench", "iostat", "vmstat"}


def sysfs(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def test_a_run_on_the_ram_disk_records_memory_durability_and_the_host_as_it_was(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1 = lab_inventory["lab1"]
    transport = host_connect(lab1)
    scratch = transport.run(["mktemp", "-d"]).stdout.strip()
    # --foreground: timeout stays in the burner's process group, which cancel() signals (without it,
    # timeout makes a group of its own and `yes` outlived the test, burning a core under later ones).
    burn = f"echo $$ > {scratch}/yes.pid; exec yes > /dev/null"
    burner = start_detached(transport, ["timeout", "--foreground", "120", "sh", "-c", burn], scratch, "burner")
    try:
        run = wait_until_finished(new_run(lab1, make_user("otto", "operator"), duration_s=6, warmup_s=0))
    finally:
        cancel(transport, burner, 2.0)
        yes_pid = transport.run(["cat", f"{scratch}/yes.pid"], check=False).stdout.strip()
        burner_left = bool(yes_pid) and process_alive(transport, int(yes_pid), as_root=True)
        transport.run(["rm", "-rf", "--", scratch])
        transport.close()

    assert yes_pid and not burner_left, f"the CPU burner (PID {yes_pid}) outlived its cancel"

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    method = run.environment["method"]
    assert method["database_bytes"] > 10 * 2**20  # scale 1: ~23 MB
    assert method["shared_buffers_bytes"] == 32 * 2**20  # the run's "shared_buffers = 32MB"
    assert method["settings"] == {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on",
                                  "checkpoint_timeout_s": 300, "max_wal_size_bytes": 2**30}  # fmt: skip
    node = run.environment["device"]["node"].rsplit("/", 1)[-1]  # the RAM disk's loop device
    scheduler = sysfs(f"/sys/block/{node}/queue/scheduler") or ""
    assert method["device"] == {"write_cache": sysfs(f"/sys/block/{node}/queue/write_cache"),
                                "scheduler": scheduler.split("[", 1)[1].split("]", 1)[0]}  # fmt: skip
    host = method["host"]
    assert host["swappiness"] == int(sysfs("/proc/sys/vm/swappiness") or -1)
    assert f"[{host['thp']}]" in (sysfs("/sys/kernel/mm/transparent_hugepage/enabled") or "")
    assert host["smt"] is {"1": True, "0": False}.get(sysfs("/sys/devices/system/cpu/smt/active") or "")
    assert host["numa_nodes"] == len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))
    if not list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        assert host["governor"] is None and host["boost"] is None  # a VM: no cpufreq
    during = method["during"]
    assert during["cpu_count"] == os.cpu_count()
    assert during["load_1m_start"] >= 0 and during["load_1m_end"] >= 0
    busiest = during["busiest"]
    assert busiest and busiest[0]["command"] == "yes" and busiest[0]["cpu_pct"] > 20, busiest
    assert not {entry["command"] for entry in busiest} & OWN_COMMANDS, busiest
