"""The checkpoints of PostgreSQL's server log: real captured logs (runs/tests/fixtures/README.md)
and hand-made edge cases; and which of them fall in a measurement's window."""

from datetime import UTC, datetime

import pytest

from runs.lab.benchmark.checkpoints import CheckpointEvent, Checkpoints, events_in_window
from runs.lab.parse.postgres_log import CheckpointLog, LoggedCheckpoint, parse_checkpoints
from runs.tests.captured import captured

TIME_LOG_PGBENCH_STARTED = 1795769935.402
WAL_LOG_PGBENCH_STARTED = 1795769856.957


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_it_reads_a_timed_checkpoint_a_checkpoint_command_and_the_shutdown_checkpoint() -> None:
    checkpoints = parse_checkpoints(captured("postgres15/checkpoints_time.log"))

    assert checkpoints == [
        LoggedCheckpoint(epoch("2026-11-27 08:59:24.114"), ("time",), 11.383),
        LoggedCheckpoint(epoch("2026-11-27 08:59:35.497"), ("immediate", "force", "wait"), 0.016),
        LoggedCheckpoint(epoch("2026-11-27 08:59:35.720"), ("shutdown", "immediate"), 0.007),
    ]
    assert [c.kind for c in checkpoints] == ["time", "other", "other"]


def test_it_reads_every_wal_checkpoint_with_its_duration() -> None:
    checkpoints = parse_checkpoints(captured("postgres15/checkpoints_wal.log"))

    kinds = [c.kind for c in checkpoints]
    assert kinds == ["wal"] * (len(checkpoints) - 2) + ["other", "other"]
    assert len(checkpoints) == 48
    assert checkpoints[0] == LoggedCheckpoint(epoch("2026-11-27 08:57:36.314"), ("wal",), 0.133)
    assert checkpoints[-1].flags == ("shutdown", "immediate")
    assert all(c.duration_s is not None for c in checkpoints)


def test_only_the_checkpoints_that_began_in_the_measured_window_count() -> None:
    time_log = parse_checkpoints(captured("postgres15/checkpoints_time.log"))
    wal_log = parse_checkpoints(captured("postgres15/checkpoints_wal.log"))
    pgbench_ended = TIME_LOG_PGBENCH_STARTED + 40.0  # before the CHECKPOINT and the shutdown

    assert events_in_window(time_log, TIME_LOG_PGBENCH_STARTED, pgbench_ended) == [
        CheckpointEvent(second=28.712, kind="time", duration_s=11.383)
    ]
    # The load's two WAL checkpoints (before pgbench started) are left out, and so are the
    # CHECKPOINT's and the shutdown's after it ended: 44 of the log's 48.
    measured = events_in_window(wal_log, WAL_LOG_PGBENCH_STARTED, WAL_LOG_PGBENCH_STARTED + 40.0)
    assert measured[0] == CheckpointEvent(second=1.037, kind="wal", duration_s=0.536)
    assert {event.kind for event in measured} == {"wal"}
    assert len(measured) == 44
    # No end yet (live): everything from pgbench's start on.
    assert len(events_in_window(wal_log, WAL_LOG_PGBENCH_STARTED)) == 46


def test_a_checkpoint_not_complete_yet_has_no_duration_until_its_complete_line_comes() -> None:
    log = CheckpointLog()
    start = "2026-11-27 10:00:00.250 UTC [7] LOG:  checkpoint starting: time"
    complete = (
        "2026-11-27 10:00:27.000 UTC [7] LOG:  checkpoint complete: wrote 6641 buffers (40.5%); 0 WAL file(s) added,"
        " 0 removed, 4 recycled; write=26.382 s, sync=0.001 s, total=26.750 s; sync files=0, longest=0.000 s,"
        " average=0.000 s; distance=66043 kB, estimate=66043 kB; lsn=0/5A3F1B0, redo lsn=0/5A3F158"  # PG 17's tail
    )

    started = log.feed(start)
    assert started == LoggedCheckpoint(epoch("2026-11-27 10:00:00.250"), ("time",), None)
    assert log.feed("2026-11-27 10:00:01.000 UTC [9] LOG:  duration: 0.118 ms  statement: SELECT 1") is None
    assert log.feed(complete) == LoggedCheckpoint(started.started_epoch, ("time",), 26.75)
    assert log.checkpoints == [LoggedCheckpoint(started.started_epoch, ("time",), 26.75)]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # A WAL request that met the timeout is counted as requested by PostgreSQL: "wal".
        ("2026-11-27 10:00:00 UTC [7] LOG:  checkpoint starting: wal time", ("wal", "time")),
        ("2026-11-27 10:00:00.000 GMT [7] LOG:  checkpoint starting: fast force wait", ("fast", "force", "wait")),
        ("2026-11-27 11:00:00.000 +01 [7] LOG:  checkpoint starting: time", ("time",)),
        ("2026-11-27 05:30:00.000 -04:30 [7] LOG:  checkpoint starting: time", ("time",)),
        ("1795773600.000 [7] LOG:  checkpoint starting: end-of-recovery immediate wait", None),  # %n
    ],
)
def test_it_reads_flags_seconds_epochs_and_offsets(line: str, expected: tuple[str, ...] | None) -> None:
    (checkpoint,) = parse_checkpoints(line)

    assert checkpoint.started_epoch == epoch("2026-11-27 10:00:00")
    if expected is not None:
        assert checkpoint.flags == expected
    assert checkpoint.kind == {"wal": "wal", "time": "time"}.get(checkpoint.flags[0], "other")


def test_it_skips_what_cannot_be_placed_in_time_or_is_not_a_checkpoint() -> None:
    text = "\n".join(
        [
            # A complete line whose start came before the part read: no duration to give to anything.
            "2026-11-27 10:00:00.000 UTC [7] LOG:  checkpoint complete: wrote 3 buffers (0.0%); total=0.010 s",
            # A zone name: which offset it meant is not in the line; its complete line belongs to it.
            "2026-11-27 10:00:01.000 CET [7] LOG:  checkpoint starting: time",
            "2026-11-27 10:00:02.000 CET [7] LOG:  checkpoint complete: wrote 3 buffers (0.0%); total=1.000 s",
            "2026-11-27 10:00:03.000 UTC [7] LOG:  checkpoints are occurring too frequently (1 second apart)",
            '2026-11-27 10:00:03.000 UTC [7] HINT:  Consider increasing the configuration parameter "max_wal_size".',
            "2026-11-27 10:00:04.000 UTC [7] LOG:  restartpoint starting: time",
            "2026-11-27 10:00:05.000 UTC [8] STATEMENT:  SELECT 'checkpoint starting: time'",
            "checkpoint starting: time",
            "",
            # This one never ends: the next one starts.
            "2026-11-27 10:00:06.000 UTC [7] LOG:  checkpoint starting: immediate force wait",
            "2026-11-27 10:00:07.000 UTC [7] LOG:  checkpoint starting: shutdown immediate",
            "2026-11-27 10:00:07.500 UTC [7] LOG:  checkpoint complete: wrote 0 buffers (0.0%); total=0.500 s",
        ]
    )

    assert parse_checkpoints(text) == [
        LoggedCheckpoint(epoch("2026-11-27 10:00:06"), ("immediate", "force", "wait"), None),
        LoggedCheckpoint(epoch("2026-11-27 10:00:07"), ("shutdown", "immediate"), 0.5),
    ]


def test_the_stored_shape_is_the_contracts() -> None:
    stored = Checkpoints(2, 1, "pg_stat_bgwriter", [CheckpointEvent(28.712, "time", 11.383)]).as_json()

    assert stored == {
        "timed": 2,
        "requested": 1,
        "source": "pg_stat_bgwriter",
        "events": [{"second": 28.712, "kind": "time", "duration_s": 11.383}],
    }
    assert Checkpoints(None, None, None, None).as_json()["events"] is None


def test_a_lab_runs_timed_checkpoint_ends_after_the_shutdown_request_and_is_still_its_own() -> None:
    checkpoints = parse_checkpoints(captured("postgres15/lab_timed_then_shutdown.log"))

    assert checkpoints == [
        LoggedCheckpoint(epoch("2026-11-27 09:55:28.064"), ("time",), 5.801),
        LoggedCheckpoint(epoch("2026-11-27 09:55:33.865"), ("shutdown", "immediate"), 0.002),
    ]
    # As the results read it, before the cluster stopped: begun, not complete.
    before_the_stop = captured("postgres15/lab_timed_then_shutdown.log").split("received fast shutdown")[0]
    assert parse_checkpoints(before_the_stop) == [LoggedCheckpoint(epoch("2026-11-27 09:55:28.064"), ("time",))]
