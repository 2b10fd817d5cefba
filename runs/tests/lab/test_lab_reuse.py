"""A run keeps its storage and loaded database for the next run of the same setup, which uses
them without mkfs or `pgbench -i` and with its own settings; a kept setup that no longer fits
is discarded and the run starts afresh. On the virtual lab, except the JSON checks."""

import dataclasses
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from runs.lab.benchmark.run import (
    BenchmarkResult,
    BenchmarkSpec,
    ClientSpec,
    Endpoint,
    KeptSetup,
    discard_kept_setup,
    remove_run_dir,
    run_benchmark,
)
from runs.lab.benchmark.spec import SilentObserver
from runs.lab.errors import CommandFailed
from runs.lab.host.run_user import RUN_USER, run_as_run_user, write_as_run_user
from runs.lab.pgbench.commands import InitOptions, RunOptions
from runs.lab.postgres.cluster import SUPERUSER
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.mounts import is_mounted
from runs.lab.storage.prepare import FilesystemSpec
from runs.lab.transport.interface import Transport
from runs.lab.transport.local import LocalTransport
from runs.lab.transport.process import Detached
from runs.lab.transport.ssh import SSHTransport
from runs.tests.virtual_lab import PG_BIN, VirtualLab


def ram_spec(
    lab: VirtualLab,
    run_key: str,
    settings: Mapping[str, str] | None = None,
    filesystem: FilesystemSpec | None = None,
    device: DeviceIdentity | None = None,
    **changes: Any,
) -> BenchmarkSpec:
    """A short scale-1 run on lab1's RAM disk with ext4 (or the given device and filesystem)."""
    spec = BenchmarkSpec(
        device=device or lab.disk("lab1", "ram"),
        filesystem=filesystem or FilesystemSpec("ext4"),
        pg_bin_dir=PG_BIN,
        init=InitOptions(scale=1),
        run=RunOptions(clients=1, duration_s=3),
        run_key=run_key,
        pg_settings=dict(settings or {}),
    )
    return dataclasses.replace(spec, **changes)


class Watcher(SilentObserver):
    """An observer that notes mkfs, and once pgbench has started looks at the running cluster
    from outside (as root, on a connection of its own): its files and the loaded table."""

    def __init__(self, lab: VirtualLab, kept: KeptSetup | None = None) -> None:
        self.lab, self.kept = lab, kept
        self.formatted: list[str] = []
        self.files: dict[str, str] = {}
        self.accounts: int | None = None
        self.log = ""  # the kept cluster's server log, A's start and stop and B's start

    def formatting(self, command: str) -> None:
        self.formatted.append(command)

    def started(self, process: Detached, on: str | None = None) -> None:
        if self.kept is None or process.name != "pgbench":  # the cluster as pgbench measures it
            return
        transport = self.lab.connect("lab1")
        try:
            self.files = cluster_files(transport, self.kept)
            self.log = transport.run(["cat", f"{self.kept.base_dir}/postgresql.log"]).stdout
            port = re.search(r"^port = (\d+)$", self.files["benchlab.conf"], re.MULTILINE)
            assert port is not None, self.files["benchlab.conf"]
            socket_dir = f"{self.kept.base_dir}/socket"
            query = [f"{PG_BIN}/psql", "-h", socket_dir, "-p", port.group(1), "-U", SUPERUSER, "-d", "bench"]
            count = run_as_run_user(transport, [*query, "-AtXc", "SELECT count(*) FROM pgbench_accounts"])
            self.accounts = int(count.stdout.strip())
        finally:
            transport.close()


def cluster_files(transport: Transport, kept: KeptSetup) -> dict[str, str]:
    data_dir = f"{kept.base_dir}/pgdata"
    names = ("postgresql.conf", "benchlab.conf", "pg_hba.conf")
    return {name: transport.run(["cat", f"{data_dir}/{name}"]).stdout for name in names}


def run_user_processes(transport: Transport) -> str:
    """The run user's processes on the host (each lab host has its own PID namespace)."""
    return transport.run(["ps", "-u", RUN_USER, "-o", "pid=,args="], check=False).stdout.strip()


def assert_gone(transport: Transport, kept: KeptSetup, result: BenchmarkResult | None = None) -> None:
    assert not is_mounted(transport, kept.mountpoint)
    assert transport.run(["test", "-e", kept.mountpoint], check=False).exit_status != 0, "mountpoint left"
    mounts = transport.run(["cat", "/proc/mounts"]).stdout
    assert kept.device_node is None or kept.device_node not in mounts
    if kept.directory is not None:
        assert transport.run(["test", "-e", kept.directory], check=False).exit_status != 0, "run directory left"
    if result is not None:
        assert not is_mounted(transport, result.storage.mountpoint)
    assert run_user_processes(transport) == ""


def run(lab: VirtualLab, transport: SSHTransport, spec: BenchmarkSpec, **kwargs: Any) -> BenchmarkResult:
    return run_benchmark(transport, lambda: lab.connect("lab1"), spec, **kwargs)


@pytest.mark.lab
def test_a_kept_setup_is_reused_without_mkfs_or_loading_and_with_only_the_next_runs_settings(
    virtual_lab: VirtualLab, lab1: SSHTransport
) -> None:
    lab2 = virtual_lab.connect("lab2")
    lab2_address = virtual_lab.host("lab2")["address"]
    # A: pgbench on lab2 over TCP (pg_hba lets lab2 in), shared_buffers 32MB, work_mem 8MB.
    a_spec = ram_spec(
        virtual_lab,
        "reuse-a",
        {"shared_buffers": "32MB", "work_mem": "8MB"},
        clients=(
            ClientSpec(PG_BIN, address=lab2_address, server_address=virtual_lab.host("lab1")["address"], name="lab2"),
        ),
    )
    # B: pgbench on lab1 itself, two clients, shared_buffers 48MB and nothing else.
    b_spec = ram_spec(
        virtual_lab, "reuse-b", {"shared_buffers": "48MB"}, run=RunOptions(clients=2, threads=1, duration_s=3)
    )
    kept = None
    try:
        a = run(virtual_lab, lab1, a_spec, clients=[Endpoint(lab2, lambda: virtual_lab.connect("lab2"))], keep=True)
        kept = a.kept
        assert a.exit_status == 0, a.stderr
        assert kept is not None
        assert not a.reused and a.reuse_refused == ""
        # Where the run's time went, stage by stage (the campaign benchmark reports these).
        assert set(a.stages) == {"hosts", "storage", "cluster", "load", "state before measuring", "before pgbench",
                                 "pgbench with metrics", "collect", "keep", "cleanup"}  # fmt: skip
        assert all(seconds >= 0 for seconds in a.stages.values())
        assert (kept.mountpoint, kept.device_node, kept.mkfs_command) == (
            a.storage.mountpoint,
            a.storage.device_node,
            a.storage.mkfs_command,
        )
        assert kept.scale == 1 and kept.database == "bench" and kept.pg_bin_dir == PG_BIN
        # Left mounted, with a stopped cluster: no process of the run user is left.
        assert is_mounted(lab1, kept.mountpoint)
        assert run_user_processes(lab1) == ""
        assert lab1.run(["test", "-e", f"{kept.base_dir}/pgdata/postmaster.pid"], check=False).exit_status != 0
        after_a = cluster_files(lab1, kept)
        assert lab2_address in after_a["pg_hba.conf"]
        assert "work_mem = '8MB'" in after_a["benchlab.conf"]

        watcher = Watcher(virtual_lab, kept)
        b = run(virtual_lab, lab1, b_spec, observer=watcher, reuse=kept)

        assert b.exit_status == 0, b.stderr
        assert b.reused and b.reuse_refused == "" and b.kept is None
        assert "kept setup checked" in b.stages and "keep" not in b.stages
        assert watcher.formatted == []  # no mkfs
        assert b.init_command == "" and "reused the database bench (scale 1)" in b.init_output
        assert b.storage.mountpoint == kept.mountpoint and b.storage.mkfs_command == kept.mkfs_command
        assert watcher.accounts == 100_000  # measured on A's data, scale 1
        # A stopped it cleanly (a kept cluster is never stopped -m immediate): B started without recovery.
        assert "database system was shut down at" in watcher.log, watcher.log
        assert "not properly shut down" not in watcher.log and "automatic recovery" not in watcher.log
        assert b.summary is not None and b.summary.clients == 2 and b.summary.scaling_factor == 1
        # B's settings only: A's work_mem did not stay, and A's client is no longer trusted.
        assert a.pg_non_default_settings["shared_buffers"] == "4096"
        assert a.pg_non_default_settings["work_mem"] == "8192"
        assert b.pg_non_default_settings["shared_buffers"] == "6144"  # 48MB in 8 kB pages
        assert "work_mem" not in b.pg_non_default_settings
        assert "work_mem" not in watcher.files["benchlab.conf"]
        assert "listen_addresses = ''" in watcher.files["benchlab.conf"]
        assert lab2_address not in watcher.files["pg_hba.conf"]
        assert watcher.files["postgresql.conf"].count("include 'benchlab.conf'") == 1
        # B did not keep: everything is gone.
        assert_gone(lab1, kept, b)
    finally:
        if kept is not None:
            discard_kept_setup(lab1, kept)
        for transport, key in ((lab1, "reuse-a"), (lab2, "reuse-a"), (lab1, "reuse-b")):
            remove_run_dir(transport, key)
        lab2.close()


def unmount_it(transport: Transport, kept: KeptSetup, spec: BenchmarkSpec) -> BenchmarkSpec:
    transport.run(["umount", kept.mountpoint])
    return spec


def another_scale(transport: Transport, kept: KeptSetup, spec: BenchmarkSpec) -> BenchmarkSpec:
    return dataclasses.replace(spec, init=InitOptions(scale=2))


def remove_its_data(transport: Transport, kept: KeptSetup, spec: BenchmarkSpec) -> BenchmarkSpec:
    transport.run(["rm", "-rf", f"{kept.base_dir}/pgdata"])
    return spec


@pytest.mark.lab
@pytest.mark.parametrize(
    "tamper, reason",
    [
        # One of each kind of check (the others are the same mechanism; the suite's time is short):
        # what the host shows.
        (unmount_it, "is not mounted any more"),
    ],
)
def test_a_kept_setup_that_no_longer_fits_is_discarded_and_the_run_starts_afresh(
    virtual_lab: VirtualLab, lab1: SSHTransport, tamper: Any, reason: str
) -> None:
    kept = None
    try:
        a = run(virtual_lab, lab1, ram_spec(virtual_lab, "refused-a"), keep=True)
        kept = a.kept
        assert kept is not None
        b_spec = tamper(lab1, kept, ram_spec(virtual_lab, "refused-b"))
        watcher = Watcher(virtual_lab)

        b = run(virtual_lab, lab1, b_spec, observer=watcher, reuse=kept)

        assert reason in b.reuse_refused
        assert not b.reused and b.kept is None
        assert b.exit_status == 0, b.stderr
        assert len(watcher.formatted) == 1 and b.init_command  # made and loaded afresh
        assert b.storage.mountpoint == "/mnt/benchlab/benchlab-refused-b"
        assert_gone(lab1, kept, b)
    finally:
        if kept is not None:
            discard_kept_setup(lab1, kept)
        remove_run_dir(lab1, "refused-a")
        remove_run_dir(lab1, "refused-b")


@pytest.mark.lab
@pytest.mark.parametrize(
    "changes, error, message",
    [
        # Fails after the run took the kept setup over: PostgreSQL refuses to start.
        ({"pg_settings": {"wal_sync_method": "fsync_writethrough"}}, CommandFailed, "wal_sync_method"),
    ],
)
def test_a_run_that_fails_with_a_kept_setup_keeps_nothing_and_leaves_nothing(
    virtual_lab: VirtualLab, lab1: SSHTransport, changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    kept = None
    try:
        kept = run(virtual_lab, lab1, ram_spec(virtual_lab, "failing-a"), keep=True).kept
        assert kept is not None

        with pytest.raises(error, match=message):
            run(virtual_lab, lab1, ram_spec(virtual_lab, "failing-b", **changes), reuse=kept, keep=True)

        assert_gone(lab1, kept)
    finally:
        if kept is not None:
            discard_kept_setup(lab1, kept)
        remove_run_dir(lab1, "failing-a")
        remove_run_dir(lab1, "failing-b")


@pytest.fixture
def directory_device(virtual_lab: VirtualLab, lab1: SSHTransport) -> Iterator[DeviceIdentity]:
    path = f"/var/tmp/benchlab-lab{virtual_lab.lab_id}-reuse-dir"
    lab1.run(["mkdir", "-p", path])
    yield DeviceIdentity(path=path)
    lab1.run(["rm", "-rf", "--one-file-system", path])


@pytest.mark.lab
@pytest.mark.parametrize("fstype", ["directory"])  # a bind mount and a directory: the most to remove
def test_discarding_a_kept_setup_stops_its_cluster_removes_everything_and_can_be_repeated(
    virtual_lab: VirtualLab, lab1: SSHTransport, directory_device: DeviceIdentity, fstype: str
) -> None:
    device = directory_device if fstype == "directory" else None
    spec = ram_spec(virtual_lab, f"discard-{fstype}", filesystem=FilesystemSpec(fstype), device=device)
    kept = None
    try:
        kept = run(virtual_lab, lab1, spec, keep=True).kept
        assert kept is not None
        assert (kept.directory is not None) == (fstype == "directory")
        # Started again behind benchlab's back: discarding stops it first.
        data_dir = f"{kept.base_dir}/pgdata"
        pg_ctl = [f"{PG_BIN}/pg_ctl", "-D", data_dir, "-l", f"{kept.base_dir}/postgresql.log", "-w", "start"]
        run_as_run_user(lab1, pg_ctl)
        assert run_user_processes(lab1) != ""

        discard_kept_setup(lab1, kept)
        assert_gone(lab1, kept)
        discard_kept_setup(lab1, kept)  # nothing there any more: no error
        assert_gone(lab1, kept)
    finally:
        if kept is not None:
            discard_kept_setup(lab1, kept)
        remove_run_dir(lab1, f"discard-{fstype}")


@pytest.mark.lab
@pytest.mark.parametrize("fstype", ["directory"])  # tmpfs is kept the same way, by its mount
def test_tmpfs_and_directory_setups_are_kept_and_reused_too(
    virtual_lab: VirtualLab, lab1: SSHTransport, directory_device: DeviceIdentity, fstype: str
) -> None:
    filesystem = FilesystemSpec(fstype, mount_options=("size=256m",) if fstype == "tmpfs" else ())
    a_spec = ram_spec(virtual_lab, f"keep-{fstype}-a", filesystem=filesystem, device=directory_device)
    b_spec = dataclasses.replace(a_spec, run_key=f"keep-{fstype}-b")
    kept = None
    try:
        kept = run(virtual_lab, lab1, a_spec, keep=True).kept
        assert kept is not None and kept.device_node is None

        b = run(virtual_lab, lab1, b_spec, reuse=kept)

        assert b.reused, b.reuse_refused
        assert b.exit_status == 0, b.stderr
        assert_gone(lab1, kept, b)
    finally:
        if kept is not None:
            discard_kept_setup(lab1, kept)
        remove_run_dir(lab1, f"keep-{fstype}-a")
        remove_run_dir(lab1, f"keep-{fstype}-b")


# ---- no lab: the settings files' writer, KeptSetup as JSON ----------------------------------------


def test_rewriting_a_file_of_the_run_user_replaces_a_planted_symlink_instead_of_following_it(
    run_user_dir: Path, tmp_path: Path
) -> None:
    # configure() rewrites benchlab.conf and pg_hba.conf in the user's data directory.
    secret = tmp_path / "root-only"  # in root's 0700 pytest directory
    secret.write_text("root's secret\n")
    planted = run_user_dir / "benchlab.conf"
    planted.symlink_to(secret)

    write_as_run_user(LocalTransport(), str(planted), "port = 54321\n")
    write_as_run_user(LocalTransport(), str(planted), "port = 54322\n")  # replaced, not appended to

    assert secret.read_text() == "root's secret\n"
    assert not planted.is_symlink() and planted.read_text() == "port = 54322\n"
    assert planted.owner() == RUN_USER and planted.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in run_user_dir.iterdir()] == ["benchlab.conf"]  # no temporary file left


GOOD: dict[str, Any] = {
    "mountpoint": "/mnt/benchlab/benchlab-42",
    "fstype": "ext4",
    "device_node": "/dev/loop3",
    "mount_options": "rw,relatime,nobarrier",
    "mkfs_command": "mkfs.ext4 -F -q /dev/loop3",
    "base_dir": "/mnt/benchlab/benchlab-42/postgres",
    "pg_bin_dir": "/usr/lib/postgresql/15/bin",
    "database": "bench",
    "scale": 10,
    "directory": None,
}
DIRECTORY = GOOD | {
    "fstype": "directory",
    "device_node": None,
    "mkfs_command": "",
    "directory": "/srv/bench/benchlab-42",
}


@pytest.mark.parametrize("data", [GOOD, DIRECTORY, GOOD | {"fstype": "tmpfs", "device_node": None}])
def test_a_kept_setup_goes_to_json_and_back_unchanged(data: dict[str, Any]) -> None:
    kept = KeptSetup.from_json(data)

    assert kept.as_json() == data
    assert KeptSetup.from_json(kept.as_json()) == kept


def test_a_kept_setup_without_a_directory_may_leave_it_out() -> None:
    assert KeptSetup.from_json({k: v for k, v in GOOD.items() if k != "directory"}) == KeptSetup.from_json(GOOD)


@pytest.mark.parametrize(
    "data, complaint",
    [
        (["not", "an", "object"], "instead of an object"),
        ({k: v for k, v in GOOD.items() if k != "scale"}, "missing keys ['scale']"),
        (GOOD | {"extra": 1}, "unknown keys ['extra']"),
        (GOOD | {"scale": "10"}, "not a positive integer"),
        (GOOD | {"scale": True}, "not a positive integer"),
        (GOOD | {"scale": 0}, "not a positive integer"),
        (GOOD | {"fstype": "ntfs"}, "unknown filesystem"),
        (GOOD | {"mountpoint": "/etc"}, "not one of benchlab's mountpoints"),
        (GOOD | {"mountpoint": "/mnt/benchlab/benchlab-42/../../../etc"}, "not one of benchlab's mountpoints"),
        (GOOD | {"base_dir": "/mnt/benchlab/benchlab-42/../x"}, "not directly below the mountpoint"),
        (GOOD | {"base_dir": "/var/lib/postgresql"}, "not directly below the mountpoint"),
        (GOOD | {"device_node": None}, "needs device node"),
        (GOOD | {"device_node": "/dev/../etc/passwd"}, "as '/etc/passwd'"),
        (GOOD | {"device_node": "/etc/passwd"}, "not a device node"),
        (GOOD | {"directory": "/srv/bench/benchlab-42"}, "a run directory belongs to a directory setup"),
        (DIRECTORY | {"directory": None}, "a run directory belongs to a directory setup"),
        (DIRECTORY | {"directory": "/srv/bench/data"}, "is not a run's directory"),
        (DIRECTORY | {"directory": "/etc/benchlab-42"}, "system directory"),
        (DIRECTORY | {"directory": "/srv/bench/../../etc/benchlab-42"}, "without '.'"),
        (DIRECTORY | {"device_node": "/dev/loop3"}, "has no device node"),
        (GOOD | {"database": "bench; DROP"}, "bad database name"),
        (GOOD | {"pg_bin_dir": "usr/lib/postgresql/15/bin"}, "not an absolute path"),
        (GOOD | {"pg_bin_dir": 15}, "pg_bin_dir is not a string"),
        (GOOD | {"mount_options": "rw, relatime"}, "not as /proc/mounts shows them"),
    ],
)
def test_a_kept_setup_refuses_junk(data: Any, complaint: str) -> None:
    with pytest.raises(ValueError, match=r"^not a kept setup: ") as refused:
        KeptSetup.from_json(data)

    assert complaint in str(refused.value)
