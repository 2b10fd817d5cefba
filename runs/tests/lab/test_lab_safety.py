"""Safety refusals, faults, cancel and the probe, on the virtual lab's real devices.

Before each refusal the device gets a filesystem labelled KEEPME; after the refusal that
label must still be there: the device was not formatted.
"""

import dataclasses
import threading
import time
from contextlib import closing
from typing import Any

import pytest

from runs.lab.benchmark.checkpoints import CheckpointEvent
from runs.lab.benchmark.run import BenchmarkResult, BenchmarkSpec, remove_run_dir, run_benchmark
from runs.lab.errors import CommandFailed, SafetyCheckFailed
from runs.lab.host.probe import probe_host
from runs.lab.parse.pgbench import ProgressSample
from runs.lab.pgbench.commands import InitOptions, RunOptions
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.mounts import is_mounted
from runs.lab.storage.prepare import FilesystemSpec, prepared_storage
from runs.lab.transport.process import Detached, cancel, is_running
from runs.lab.transport.ssh import SSHTransport
from runs.lab.transport.waiting import wait_until
from runs.tests.virtual_lab import PG_BIN, VirtualLab, lab_command

pytestmark = pytest.mark.lab
EXT4 = FilesystemSpec("ext4")


@pytest.fixture
def keepme(virtual_lab: VirtualLab, lab2: SSHTransport) -> DeviceIdentity:
    """lab2's RAM disk with a filesystem that must survive every refusal."""
    device = virtual_lab.disk("lab2", "ram")
    lab2.run(["mkfs.ext4", "-F", "-q", "-L", "KEEPME", device.path])
    return device


def label_of(transport: SSHTransport, device: DeviceIdentity) -> str:
    return transport.run(["blkid", "-p", "-s", "LABEL", "-o", "value", device.path], check=False).stdout.strip()


def refusal(
    transport: SSHTransport, device: DeviceIdentity, run_key: str, keepme: DeviceIdentity | None = None
) -> SafetyCheckFailed:
    with pytest.raises(SafetyCheckFailed) as refused, prepared_storage(transport, device, EXT4, run_key):
        pytest.fail("the device was prepared although a safety check should have failed")
    assert label_of(transport, keepme or device) == "KEEPME", "the device was formatted"
    return refused.value


def test_it_refuses_a_device_the_inventory_does_not_allow_to_wipe(lab2: SSHTransport, keepme: DeviceIdentity) -> None:
    device = DeviceIdentity(path=keepme.path, wipe_allowed=False, size_bytes=keepme.size_bytes)

    assert refusal(lab2, device, "no-wipe").check == "wipe allowed"


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"size_bytes": 123456789}, "bytes, the inventory says 123456789"),
        ({"serial": "WD-WCAZA1234567"}, "the inventory says 'WD-WCAZA1234567'"),
        ({"size_bytes": None}, "neither serial nor size"),
        ({"path": "/dev/disk/by-id/benchlab-no-such-disk"}, "not a block device"),
    ],
)
def test_it_refuses_a_device_that_is_not_the_one_the_inventory_records(
    lab2: SSHTransport, keepme: DeviceIdentity, changes: dict[str, Any], reason: str
) -> None:
    device = dataclasses.replace(keepme, **changes)

    refused = refusal(lab2, device, "identity", keepme)

    assert refused.check == "identity"
    assert reason in refused.detail


def test_it_refuses_a_mounted_device(lab2: SSHTransport, keepme: DeviceIdentity) -> None:
    lab2.run(["mkdir", "-p", "/mnt/keepme"])
    lab2.run(["mount", keepme.path, "/mnt/keepme"])
    try:
        refused = refusal(lab2, keepme, "mounted")
    finally:
        lab2.run(["umount", "/mnt/keepme"])
        lab2.run(["rmdir", "/mnt/keepme"])

    assert refused.check == "not mounted"
    assert "/mnt/keepme" in refused.detail


@pytest.mark.parametrize("listed_as", ["LABEL=KEEPME", "by-id link"])
def test_it_refuses_a_device_listed_in_fstab(lab2: SSHTransport, keepme: DeviceIdentity, listed_as: str) -> None:
    source = keepme.path if listed_as == "by-id link" else listed_as
    fake = "/tmp/benchlab-test-fstab"
    lab2.write_file(fake, f"# test\n{source} /data ext4 defaults 0 2\n".encode())
    # Only inside lab2's own mount namespace: the machine's /etc/fstab is not touched.
    lab2.run(["mount", "--bind", fake, "/etc/fstab"])
    try:
        refused = refusal(lab2, keepme, "fstab")
    finally:
        lab2.run(["umount", "/etc/fstab"])
        lab2.run(["rm", "-f", fake])

    assert refused.check == "not in /etc/fstab"


def test_it_refuses_the_device_holding_boot(lab2: SSHTransport, keepme: DeviceIdentity) -> None:
    lab2.run(["mount", keepme.path, "/boot"])  # in lab2's mount namespace only
    try:
        refused = refusal(lab2, keepme, "boot")
    finally:
        lab2.run(["umount", "/boot"])

    assert refused.check == "not a system device"
    assert "root or boot" in refused.detail


def test_it_refuses_a_device_in_use_as_swap(lab2: SSHTransport, virtual_lab: VirtualLab) -> None:
    device = virtual_lab.disk("lab2", "ram")
    lab2.run(["mkswap", "-L", "KEEPME", device.path])
    lab2.run(["swapon", device.path])
    try:
        refused = refusal(lab2, device, "swap")
    finally:
        lab2.run(["swapoff", device.path])

    assert refused.check == "not a system device"
    assert "swap" in refused.detail


def test_a_failing_disk_fails_cleanly_and_leaves_nothing_mounted(virtual_lab: VirtualLab, lab2: SSHTransport) -> None:
    lab_command(virtual_lab.lab_id, "hdd-fail", "lab2", "on")
    try:
        with (
            pytest.raises(CommandFailed) as failure,
            prepared_storage(lab2, virtual_lab.disk("lab2", "hdd"), EXT4, "eio"),
        ):
            pytest.fail("prepared a filesystem on a disk that returns EIO")
    finally:
        lab_command(virtual_lab.lab_id, "hdd-fail", "lab2", "off")

    assert "mkfs.ext4" in failure.value.command
    assert not is_mounted(lab2, "/mnt/benchlab/benchlab-eio")


def test_cancel_stops_pgbench_and_the_run_still_cleans_up(virtual_lab: VirtualLab, lab2: SSHTransport) -> None:
    started: list[Detached] = []
    samples: list[ProgressSample] = []

    class CancelAfterTwoSeconds:
        def step(self, name: str) -> None: ...

        def formatting(self, command: str) -> None: ...

        def line(self, stream: str, text: str) -> None: ...

        def client_progress(self, name: str, sample: ProgressSample) -> None:
            pass

        def progress(self, sample: ProgressSample) -> None:
            samples.append(sample)

        def started(self, process: Detached, on: str | None = None) -> None:
            started.append(process)

        def followed(self, offset: int) -> None: ...

        def collected(self, result: BenchmarkResult) -> None: ...

        def checkpoint(self, event: CheckpointEvent) -> None: ...

    def canceller() -> None:
        wait_until(lambda: len(samples) >= 2, 120, 0.1)  # else the run ends uncancelled: asserted below
        # On a connection of its own, as the worker's cancel watch does (RunObserver.cancel_now).
        pgbench = next(p for p in started if p.name == "pgbench")  # not pgbench -i, started first
        with closing(virtual_lab.connect("lab2")) as connection:
            cancel(connection, pgbench)

    thread = threading.Thread(target=canceller, daemon=True)
    thread.start()
    spec = BenchmarkSpec(
        device=virtual_lab.disk("lab2", "ram"),
        filesystem=EXT4,
        pg_bin_dir=PG_BIN,
        init=InitOptions(scale=1),
        run=RunOptions(clients=1, duration_s=120),
        run_key="cancel",
    )
    began = time.monotonic()
    try:
        result = run_benchmark(lab2, lambda: virtual_lab.connect("lab2"), spec, CancelAfterTwoSeconds())
    finally:
        remove_run_dir(lab2, "cancel")
    thread.join(timeout=30)

    assert time.monotonic() - began < 90, "the cancelled run waited for its full duration"
    assert result.exit_status not in (None, 0)
    assert not is_running(lab2, started[0])
    assert not is_mounted(lab2, result.storage.mountpoint)


def test_the_probe_finds_the_hosts_facts_disks_and_postgresql(virtual_lab: VirtualLab) -> None:
    transport = virtual_lab.connect("lab1")
    try:
        facts = probe_host(transport)
    finally:
        transport.close()

    assert facts.hostname == "lab1"
    assert facts.cpu_cores and facts.cpu_cores >= 1 and facts.memory_bytes and facts.kernel and facts.distribution
    for disk in virtual_lab.host("lab1")["disks"].values():
        assert facts.by_id[disk["link"]] == disk["loop"]
        listed = next(d for d in facts.block_devices if d["path"] == disk["loop"])
        assert listed["size"] == disk["size_bytes"]
    assert {"ext4", "xfs", "btrfs"} <= set(facts.mkfs_programs)
    assert any(pg.bin_dir == PG_BIN and pg.block_size == 8192 and pg.wal_block_size == 8192 for pg in facts.pg_installs)
    assert facts.pgbench_version.startswith("pgbench (PostgreSQL) 15")
    assert facts.tools["iostat"] and facts.tools["vmstat"]
