"""A device that fails under a run: the run fails saying why in PostgreSQL's and the kernel's
words (runs/lab/storage/diagnose.py), its storage is unmounted, and the host takes the next run.

The parsers against text captured on the virtual lab (PostgreSQL 15, kernel 6.18); the whole
through a real Celery worker, with the HDD-like disk's fault switch and a small disk of the
test's own."""

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from runs.lab.errors import StorageFailed
from runs.lab.storage.diagnose import (
    StorageFault,
    human_size,
    kernel_device_lines,
    postgres_storage_lines,
    storage_fault,
)
from runs.models import Device, Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.jobs.test_worker_death import left_on_host
from runs.tests.virtual_lab import VirtualLab, scratch_disk
from runs.tests.waits import wait_for_samples, wait_for_state, wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory"]  # a fixture, used by name
SMALL_DISK_BYTES = 96 * 2**20  # room for a cluster, not for scale 20 (about 300 MiB)

# pgbench's stderr when the HDD started failing mid-measurement (ext4).
PGBENCH_ABORTED = """\
starting vacuum...end.
progress: 2.0 s, 92.0 tps, lat 21.661 ms stddev 0.300, 0 failed
pgbench: error: client 1 script 0 aborted in command 10 query 0: PANIC:  could not fdatasync file \
"000000010000000000000002": Input/output error
WARNING:  terminating connection because of crash of another server process
DETAIL:  The postmaster has commanded this server process to roll back the current transaction and exit, because \
another server process exited abnormally and possibly corrupted shared memory.
pgbench: error: client 0 aborted in command 8 (SQL) of script 0; perhaps the backend died while processing
pgbench: error: Run was aborted; the above results are incomplete.
"""
# The server log of that run: the same PANIC, then a LOG line about its pid file.
SERVER_LOG_PANIC = """\
2026-11-23 21:53:08.529 UTC [4669] LOG:  database system is ready to accept connections
2026-11-23 21:53:12.878 UTC [4759] PANIC:  could not fdatasync file "000000010000000000000002": Input/output error
2026-11-23 21:53:12.878 UTC [4759] STATEMENT:  END;
2026-11-23 21:53:12.880 UTC [4669] LOG:  server process (PID 4759) was terminated by signal 6: Aborted
2026-11-23 21:53:12.882 UTC [4669] LOG:  all server processes terminated; reinitializing
2026-11-23 21:53:12.890 UTC [4669] LOG:  could not write to file "postmaster.pid": Input/output error
"""
# The server log of `pgbench -i -s 20` on a 96 MiB disk.
SERVER_LOG_FULL = """\
2026-11-23 21:53:02.107 UTC [4457] LOG:  database system is ready to accept connections
2026-11-23 21:53:02.469 UTC [4492] ERROR:  could not extend file "base/16385/16398": No space left on device
2026-11-23 21:53:02.469 UTC [4492] HINT:  Check free disk space.
2026-11-23 21:53:02.469 UTC [4492] CONTEXT:  COPY pgbench_accounts, line 166000
2026-11-23 21:53:02.469 UTC [4492] STATEMENT:  copy pgbench_accounts from stdin with (freeze on)
"""
# dmesg of that ext4 run, shortened: mkfs's and the mount's lines, then the fault.
DMESG_EXT4 = """\
[ 2353.512005] operation not supported error, dev loop1, sector 196480 op 0x9:(WRITE_ZEROES) flags 0x20000800 phys_seg 0 prio class 2
[ 2353.542239] EXT4-fs (loop1): mounted filesystem afcf9040-4706-4766-b45f-259361b75436 r/w with ordered data mode. Quota mode: none.
[ 2358.589960] blk_print_req_error: 5 callbacks suppressed
[ 2358.589966] I/O error, dev loop1, sector 323104 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2
[ 2358.591123] EXT4-fs warning (device loop1): ext4_end_bio:368: I/O error 10 writing to inode 1323 starting block 40388)
[ 2358.591129] Buffer I/O error on device loop1, logical block 40388
[ 2358.591200] I/O error, dev loop10, sector 1024 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 2
[ 2358.591882] Buffer I/O error on device loop1, logical block 40389
[ 2358.602802] I/O error, dev loop1, sector 266352 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2
[ 2358.609803] I/O error, dev loop1, sector 266360 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2
[ 2358.610984] EXT4-fs (loop1): failed to convert unwritten extents to written extents -- potential data loss!  (inode 198, error -5)
[ 2358.685741] Buffer I/O error on dev loop1, logical block 65819, lost sync page write
[ 2358.686791] Aborting journal on device loop1-8.
[ 2358.688398] JBD2: I/O error when updating journal superblock for loop1-8.
[ 2358.689295] EXT4-fs error (device loop1): ext4_journal_check_start:87: comm postgres: Detected aborted journal
"""  # noqa: E501 - the kernel's lines as they are
DMESG_BTRFS = """\
[ 2327.513502] BTRFS info (device loop1): first mount of filesystem f9b5f109-ff6a-470a-838f-5063b8dfc572
[ 2346.318563] I/O error, dev loop1, sector 100544 op 0x1:(WRITE) flags 0x1800 phys_seg 4 prio class 2
[ 2346.318735] BTRFS error (device loop1): bdev /dev/loop1 errs: wr 1, rd 0, flush 0, corrupt 0, gen 0
[ 2346.320353] BTRFS error (device loop1): bdev /dev/loop1 errs: wr 2, rd 0, flush 0, corrupt 0, gen 0
[ 2346.345109] BTRFS error (device loop1 state A): Transaction aborted (error -5)
[ 2346.351013] BTRFS info (device loop1 state EA): forced readonly
"""


# ---- the parsers ---------------------------------------------------------------------------


def test_it_quotes_postgresqls_panic_from_pgbench_and_the_server_log_once() -> None:
    panic = 'PANIC: could not fdatasync file "000000010000000000000002": Input/output error'

    assert postgres_storage_lines(PGBENCH_ABORTED) == [panic]
    assert postgres_storage_lines(SERVER_LOG_PANIC) == [panic]  # not the LOG line about the pid file
    fault = storage_fault([PGBENCH_ABORTED, SERVER_LOG_PANIC], [], "loop1", read_only=False)
    assert fault is not None and fault.postgres == [panic] and not fault.full


def test_it_tells_a_full_device_by_postgresqls_no_space_error() -> None:
    fault = storage_fault([SERVER_LOG_FULL], DMESG_EXT4.splitlines()[:2], "loop1", read_only=False)

    assert fault is not None and fault.full and fault.kernel == []  # mkfs's and the mount's lines are no fault
    assert fault.reason == 'PostgreSQL: ERROR: could not extend file "base/16385/16398": No space left on device'


def test_it_keeps_the_kernels_lines_about_the_device_the_filesystems_state_first_each_kind_once() -> None:
    lines = kernel_device_lines(DMESG_EXT4.splitlines(), "loop1")

    assert lines[:3] == [
        "Aborting journal on device loop1-8.",
        "JBD2: I/O error when updating journal superblock for loop1-8.",
        "EXT4-fs error (device loop1): ext4_journal_check_start:87: comm postgres: Detected aborted journal",
    ]
    assert lines[3] == "I/O error, dev loop1, sector 323104 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2"
    assert sum(line.startswith("I/O error, dev loop1,") for line in lines) == 1  # numbers differ, kind is one
    assert sum(line.startswith("Buffer I/O error on device loop1") for line in lines) == 1
    assert not any("loop10" in line or "mounted filesystem" in line or "not supported" in line for line in lines)
    assert kernel_device_lines(DMESG_EXT4.splitlines(), "loop10") == [
        "I/O error, dev loop10, sector 1024 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 2"
    ]


def test_it_reads_btrfs_going_read_only() -> None:
    fault = storage_fault([""], DMESG_BTRFS.splitlines(), "loop1", read_only=True)

    assert fault is not None
    assert fault.kernel[0] == "BTRFS info (device loop1 state EA): forced readonly"
    assert fault.reason.startswith("kernel: BTRFS info (device loop1 state EA): forced readonly; BTRFS error")
    assert fault.reason.endswith(" — the filesystem is read-only now")


def test_a_failure_that_is_not_the_storages_is_left_as_it_was() -> None:
    script_error = "pgbench: error: client 0 script 0 aborted in command 1 query 0: ERROR:  division by zero\n"
    healthy_dmesg = DMESG_EXT4.splitlines()[:3]

    assert storage_fault([script_error, SERVER_LOG_FULL.splitlines()[0]], healthy_dmesg, "loop1", False) is None
    assert storage_fault([SERVER_LOG_PANIC], [], None, False) is not None  # tmpfs: PostgreSQL's word alone


def test_the_reason_is_capped_and_says_how_much_more_there_was() -> None:
    fault = StorageFault(postgres=[f"ERROR: e{i}: Input/output error" for i in range(5)], kernel=[], read_only=False)

    assert fault.reason.endswith("ERROR: e2: Input/output error (and 2 more)")


def test_the_message_names_the_device_its_size_and_what_was_asked() -> None:
    full = StorageFailed(
        device="/dev/disk/by-id/x", node="/dev/loop3", fstype="ext4", size=human_size(64 * 2**20),
        doing="loading scale 20 with pgbench -i", reason="PostgreSQL: ERROR: …: No space left on device",
        full=True, hint="scale 20 needs about 300 MiB for its tables and indexes, plus the cluster and its WAL",
    )  # fmt: skip
    failed = StorageFailed(device="/dev/disk/by-id/x", node="/dev/loop1", fstype="xfs", size=None,
                           doing="measuring", reason="kernel: XFS (loop1): log I/O error -5", full=False)  # fmt: skip

    assert full.describe("lab1:ram") == (
        "device full: lab1:ram (64 MiB) filled up while loading scale 20 with pgbench -i; scale 20 needs about "
        "300 MiB for its tables and indexes, plus the cluster and its WAL. "
        "PostgreSQL: ERROR: …: No space left on device"
    )
    assert str(failed) == (
        "the storage failed while measuring: /dev/disk/by-id/x (/dev/loop1, xfs) — "
        "kernel: XFS (loop1): log I/O error -5"
    )
    assert [human_size(n) for n in (512, 96 * 2**20, 3 * 2**29, 2**40)] == ["512 bytes", "96 MiB", "1.5 GiB", "1 TiB"]


# ---- whole runs on the virtual lab ---------------------------------------------------------


@pytest.fixture
def small_disk(lab_inventory: dict[str, Host]) -> Iterator[Device]:
    with scratch_disk("small", SMALL_DISK_BYTES) as path:
        yield Device.objects.create(
            host=lab_inventory["lab1"], name="small", kind=Device.Kind.RAM, path=path,
            capacity_bytes=SMALL_DISK_BYTES, wipe_allowed=True,
        )  # fmt: skip


def run_page(run: Run, user: User) -> str:
    browser = Client()
    browser.force_login(user)
    return browser.get(reverse("run-detail", args=[run.pk])).content.decode()


@pytest.mark.lab
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize(
    "filesystem",
    [
        # Its unmount's writes fail: an error nobody was told of, which the next mkfs.xfs would hit.
        "ext4",
        # Shut down by the error: every look at its directory fails (`mountpoint` says "not mounted").
        "xfs",
    ],
)
def test_a_disk_failing_mid_measurement_fails_the_run_with_the_reason_and_the_host_takes_the_next_run(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab, filesystem: str
) -> None:
    lab1, otto = lab_inventory["lab1"], make_user("otto", "operator")
    hdd = lab1.devices.get(name="hdd")
    run = new_run(lab1, otto, device=hdd, filesystem=filesystem, duration_s=30, warmup_s=0)
    wait_for_state(run, RunState.MEASURING)
    wait_for_samples(run, 2)
    with virtual_lab.hdd_failing("lab1"):
        run = wait_until_finished(run, timeout=120)
        left = left_on_host(lab1, run)  # the device still failing: cleaned up all the same
    page = run_page(run, otto)
    following = wait_until_finished(new_run(lab1, otto, device=hdd, filesystem="xfs", duration_s=2, warmup_s=0))

    assert run.state == RunState.FAILED and run.failed_step == RunState.MEASURING, celery_worker.log()[-3000:]
    assert run.error.startswith(f"the storage failed while measuring: {hdd} (/dev/loop"), run.error
    assert "PostgreSQL: PANIC: " in run.error and "Input/output error" in run.error, run.error
    assert " kernel: " in run.error and "loop" in run.error.partition(" kernel: ")[2], run.error
    assert run.failed_command.startswith(f"{run.pg_install.bin_dir}/pgbench ") and run.failed_exit_status == 2
    assert "aborted" in run.failed_output
    assert run.samples.count() >= 2  # what it measured before the fault stays
    assert left == {"mounted": False, "processes": [], "run_dir": False}
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    assert "Failed while measuring" in page and escape(run.error) in page
    assert following.state == RunState.DONE, (following.error, following.failed_output)


@pytest.mark.lab
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_device_that_fills_up_during_pgbench_init_fails_the_run_saying_device_full(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], small_disk: Device
) -> None:
    lab1, otto = lab_inventory["lab1"], make_user("otto", "operator")
    run = wait_until_finished(new_run(lab1, otto, device=small_disk, scale=20))
    left = left_on_host(lab1, run)
    page = run_page(run, otto)

    assert run.state == RunState.FAILED and run.failed_step == RunState.INITIALIZING_DATABASE, run.error
    assert run.error.startswith(
        f"device full: {small_disk} (96 MiB) filled up while loading scale 20 with pgbench -i; "
        "scale 20 needs about 300 MiB"
    ), run.error
    assert "PostgreSQL: " in run.error and "No space left on device" in run.error
    assert " -i " in run.failed_command and run.failed_exit_status == 1
    assert left == {"mounted": False, "processes": [], "run_dir": False}
    assert Host.objects.get(pk=lab1.pk).claimed_by_id is None
    assert escape(run.error) in page
