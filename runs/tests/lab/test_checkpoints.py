"""A run's checkpoints on the virtual lab (issue 32): counted from PostgreSQL's statistics, their
times read from its log, and each one told live while pgbench runs. One run long enough for a
timed checkpoint (checkpoint_timeout is at least 30 s), which keeps its setup for a short second
run whose tiny max_wal_size forces WAL checkpoints (no mkfs, no load: the suite's time matters)."""

import time
from pathlib import Path

import pytest

from runs.lab.benchmark.checkpoints import CheckpointEvent, CheckpointWatch
from runs.lab.benchmark.run import discard_kept_setup, remove_run_dir, run_benchmark
from runs.lab.benchmark.spec import SilentObserver
from runs.lab.host.run_user import append_as_run_user, read_as_run_user, run_as_run_user, write_as_run_user
from runs.lab.options import RunOptions
from runs.lab.postgres.cluster import HBA_ORIGINAL, SETTINGS_FILE, Cluster, configure
from runs.lab.transport.local import LocalTransport
from runs.lab.transport.process import exit_status
from runs.lab.transport.ssh import SSHTransport
from runs.lab.transport.waiting import wait_until
from runs.tests.browser import ARTIFACTS
from runs.tests.lab.test_lab_reuse import ram_spec, run_user_processes
from runs.tests.virtual_lab import VirtualLab

TIMED_RUN_S = 35  # the timer starts with the cluster, a few seconds before pgbench


class Told(SilentObserver):
    """Keeps each checkpoint event told live, with when it came (the lab's hosts share this clock)."""

    def __init__(self) -> None:
        self.events: list[tuple[float, CheckpointEvent]] = []

    def checkpoint(self, event: CheckpointEvent) -> None:
        self.events.append((time.time(), event))


@pytest.mark.lab
def test_a_runs_checkpoints_are_counted_timed_and_told_live_and_a_tiny_max_wal_size_makes_wal_ones(
    virtual_lab: VirtualLab, lab1: SSHTransport
) -> None:
    timed_spec = ram_spec(virtual_lab, "ckpt-time", {"checkpoint_timeout": "30s"},
                          run=RunOptions(clients=1, duration_s=TIMED_RUN_S))  # fmt: skip
    wal_spec = ram_spec(virtual_lab, "ckpt-wal", {"max_wal_size": "32MB", "min_wal_size": "32MB"},
                        run=RunOptions(clients=2, threads=1, duration_s=4))  # fmt: skip
    told, kept = Told(), None

    def connect() -> SSHTransport:
        return virtual_lab.connect("lab1")

    try:
        timed = run_benchmark(lab1, connect, timed_spec, told, keep=True)
        kept = timed.kept
        assert kept is not None, timed.stderr
        log = read_as_run_user(lab1, f"{kept.base_dir}/postgresql.log")
        (ARTIFACTS / "lab-checkpoints-time.log").write_text(log)  # real lab text, for the parser's fixtures
        wal = run_benchmark(lab1, connect, wal_spec, reuse=kept)
        kept = None  # used up by the second run
        left = run_user_processes(lab1)  # no follower, tail or sentinel outlives a run
    finally:
        if kept is not None:
            discard_kept_setup(lab1, kept)
        for key in ("ckpt-time", "ckpt-wal"):
            remove_run_dir(lab1, key)

    assert timed.exit_status == 0 and wal.exit_status == 0, (timed.stderr, wal.stderr)
    assert timed.checkpoints is not None and timed.pgbench_started_epoch is not None
    assert timed.checkpoints.source == "pg_stat_bgwriter"  # PostgreSQL 15
    assert (timed.checkpoints.timed or 0) >= 1, timed.checkpoints
    events = timed.checkpoints.events
    assert events is not None and any(e.kind == "time" for e in events), events
    timed_event = next(e for e in events if e.kind == "time")
    assert 0 <= timed_event.second <= TIMED_RUN_S, events
    # Told live at its start, within a few seconds of it. (With checkpoint_completion_target 0.9 it
    # is spread over 27 s: it may still run when the results are read, and then has no duration.)
    started_live = [(at, e) for at, e in told.events if e.kind == "time" and e.second == timed_event.second]
    assert started_live and started_live[0][1].duration_s is None, told.events
    told_after_s = started_live[0][0] - (timed.pgbench_started_epoch + timed_event.second)
    assert 0 <= told_after_s < 3, told_after_s
    # The load's checkpoints and the shutdown checkpoint are not the window's.
    assert all(e.second >= 0 for _, e in told.events)

    assert wal.checkpoints is not None and (wal.checkpoints.requested or 0) >= 1, wal.checkpoints
    assert wal.checkpoints.events and {e.kind for e in wal.checkpoints.events} == {"wal"}, wal.checkpoints
    assert all(0 <= e.second <= 6 for e in wal.checkpoints.events)
    assert left == ""


# ---- no lab: the settings benchlab writes so that the log says when each checkpoint began ----


def test_the_cluster_logs_checkpoints_stamped_in_utc_to_the_millisecond_unless_told_not_to(run_user_dir: Path) -> None:
    local = LocalTransport()
    cluster = Cluster(bin_dir="/nonexistent", base_dir=str(run_user_dir), port=0)
    run_as_run_user(local, ["mkdir", cluster.data_dir])
    write_as_run_user(local, f"{cluster.data_dir}/{HBA_ORIGINAL}", "local all all trust\n")
    conf = f"{cluster.data_dir}/{SETTINGS_FILE}"

    configure(local, cluster, {"work_mem": "8MB"})
    by_default = read_as_run_user(local, conf).splitlines()
    configure(local, cluster, {"log_checkpoints": "off"})
    turned_off = read_as_run_user(local, conf).splitlines()

    assert by_default[4:] == [
        "log_line_prefix = '%m [%p] '",
        "log_timezone = 'UTC'",
        "log_checkpoints = 'on'",
        "work_mem = '8MB'",
    ]
    assert turned_off[4:] == ["log_line_prefix = '%m [%p] '", "log_timezone = 'UTC'", "log_checkpoints = 'off'"]


def test_the_watch_tells_each_checkpoint_of_the_window_as_it_is_logged_and_stops_with_its_block(
    run_user_dir: Path,
) -> None:
    local = LocalTransport()
    cluster = Cluster(bin_dir="/nonexistent", base_dir=str(run_user_dir), port=0)
    started = 1795769935.402
    stamp = "2026-11-27 08:{}.{:03d} UTC [7466] LOG:  checkpoint {}"
    load = stamp.format("58:50", 0, "starting: wal")  # before pgbench started: the load's
    append_as_run_user(local, cluster.log_file, f"{load}\n")
    told: list[tuple[float, CheckpointEvent]] = []

    def on_event(event: CheckpointEvent) -> None:
        told.append((time.monotonic(), event))

    watch = CheckpointWatch(local, LocalTransport, cluster, str(run_user_dir), lambda: started, on_event, limit_s=60)
    with watch:
        wait_until(lambda: watch.thread is not None and len(watch.log.checkpoints) == 1, 10, 0.05)
        written = time.monotonic()
        append_as_run_user(local, cluster.log_file, stamp.format("59:24", 114, "starting: time") + "\n")
        wait_until(lambda: told, 10, 0.05)
        complete = "complete: wrote 6641 buffers (40.5%); write=11.382 s, sync=0.001 s, total=11.383 s"
        append_as_run_user(local, cluster.log_file, stamp.format("59:35", 496, complete) + "\n")
        leaving = time.monotonic()
    left_after_s = time.monotonic() - leaving
    sentinel = watch.sentinel
    assert sentinel is not None

    assert [event for _, event in told] == [
        CheckpointEvent(28.712, "time", None),
        CheckpointEvent(28.712, "time", 11.383),  # its end, read before the watch stopped
    ]
    assert told[0][0] - written < 1.5  # within a second or so of the line
    assert left_after_s < 5 and not watch.thread.is_alive()  # type: ignore[union-attr]
    assert exit_status(local, sentinel) is not None  # the sentinel ended (stopped), not left sleeping
