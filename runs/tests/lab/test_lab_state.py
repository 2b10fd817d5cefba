"""On the virtual lab: a run asked for a cold cache and frozen data measures from exactly that (its
server restarted after loading, the device read again, VACUUM FREEZE run), with pgbench given its
seed; and its thrown-away cluster, stopped immediately, leaves no mount and no process behind.
(That a kept setup still starts again cleanly: test_lab_reuse.py.) One short run on the RAM disk."""

import re

import pytest

from runs.lab.benchmark.run import remove_run_dir, run_benchmark
from runs.lab.benchmark.spec import SilentObserver
from runs.lab.host.run_user import run_as_run_user
from runs.lab.options import RunOptions, StateBefore
from runs.lab.postgres.cluster import SUPERUSER
from runs.lab.storage.mounts import is_mounted
from runs.lab.transport.process import Detached
from runs.lab.transport.ssh import SSHTransport
from runs.tests.lab.test_lab_reuse import ram_spec, run_user_processes
from runs.tests.virtual_lab import PG_BIN, VirtualLab


class Vacuums(SilentObserver):
    """Once pgbench has started, reads how often pgbench_accounts was vacuumed by hand, as root on a
    connection of its own: pgbench -i once, VACUUM FREEZE once more."""

    def __init__(self, lab: VirtualLab, mountpoint: str) -> None:
        self.lab, self.mountpoint = lab, mountpoint
        self.vacuums: int | None = None

    def started(self, process: Detached, on: str | None = None) -> None:
        if process.name != "pgbench":
            return
        transport = self.lab.connect("lab1")
        try:
            base_dir = f"{self.mountpoint}/postgres"
            conf = transport.run(["cat", f"{base_dir}/pgdata/benchlab.conf"]).stdout
            port = re.search(r"^port = (\d+)$", conf, re.MULTILINE)
            assert port is not None, conf
            query = [f"{PG_BIN}/psql", "-h", f"{base_dir}/socket", "-p", port.group(1), "-U", SUPERUSER, "-d", "bench"]
            sql = "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'pgbench_accounts'"
            self.vacuums = int(run_as_run_user(transport, [*query, "-AtXc", sql]).stdout.strip())
        finally:
            transport.close()


@pytest.mark.lab
def test_a_cold_frozen_run_restarts_and_rereads_after_loading_and_leaves_nothing_behind(
    virtual_lab: VirtualLab, lab1: SSHTransport
) -> None:
    state = StateBefore(cache="cold", data="frozen", checkpoint=True, settle_s=5)
    spec = ram_spec(virtual_lab, "state-cold", run=RunOptions(clients=1, duration_s=3, random_seed=4242), state=state)
    mountpoint = f"/mnt/benchlab/benchlab-{spec.run_key}"
    watcher = Vacuums(virtual_lab, mountpoint)
    try:
        result = run_benchmark(lab1, lambda: virtual_lab.connect("lab1"), spec, observer=watcher)

        assert result.exit_status == 0, result.stderr
        assert "--random-seed=4242" in result.command
        done = result.state_before
        assert (done["cache"], done["data"], done["checkpoint_before"]) == ("cold", "frozen", True)
        assert 0 <= done["settle_s"] <= 5.5
        # Cold: the server started again after the load, and the device was read while measuring
        # (the OS caches were dropped: a warm run of scale 1 reads nothing from the device).
        assert result.loaded_epoch is not None and done["server_started_epoch"] > result.loaded_epoch
        assert sum(sample.rkb_per_s for sample in result.os.iostat) > 0, result.os.iostat_text
        assert watcher.vacuums == 2  # pgbench -i's VACUUM, then VACUUM FREEZE
        assert "state before measuring" in result.stages
        # Stopped immediately and thrown away: no mount, no process of the run's user.
        assert not is_mounted(lab1, result.storage.mountpoint)
        assert lab1.run(["test", "-e", result.storage.mountpoint], check=False).exit_status != 0
        assert run_user_processes(lab1) == ""
    finally:
        remove_run_dir(lab1, spec.run_key)
