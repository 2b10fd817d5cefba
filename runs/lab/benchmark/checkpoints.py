"""The checkpoints of a measurement: how many PostgreSQL counted (timed and requested, from its
statistics: metrics.py), when each began and how long it took (from its log, where benchlab's
cluster logs them: cluster.py), and each one told live while pgbench runs.

Only the measured window counts: from pgbench's start (its first progress second; with several
client hosts the earliest, by that host's clock) to when the results are collected. The load's
checkpoints come before it, the shutdown checkpoint after.

Live, the server log is followed beside pgbench as pgbench's own output is (pgbench/follow.py),
on a connection of its own, for as long as a sentinel process on the server runs: stopping
the sentinel ends the follow once every line is read. A worker that reattaches follows it
again from the log's start (resume.py): the events told twice are the same events, and the
page keeps one of each. What is stored is read from the log once the measurement is over,
whatever the live follower saw.
"""

import logging
import secrets
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

from runs.lab.benchmark.metrics import PgStatsDelta
from runs.lab.host.run_user import RUN_USER, run_as_run_user
from runs.lab.parse.postgres_log import CheckpointLog, LoggedCheckpoint, parse_checkpoints
from runs.lab.pgbench.follow import Follower
from runs.lab.postgres.cluster import Cluster, psql
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached, cancel, start_detached

log = logging.getLogger(__name__)

# What of the log is read once the measurement is over: only checkpoint lines, so that a user who
# logs every statement does not send the whole log over the network.
_CHECKPOINT_LINES = ("checkpoint starting:", "checkpoint complete:")


@dataclass(frozen=True)
class CheckpointEvent:
    second: float  # since pgbench started (its first progress second), when the checkpoint began
    kind: str  # "time", "wal" or "other" (parse/postgres_log.py)
    duration_s: float | None  # None: it had not completed when read


def checkpoint_event(logged: LoggedCheckpoint, started_epoch: float) -> CheckpointEvent:
    return CheckpointEvent(round(logged.started_epoch - started_epoch, 3), logged.kind, logged.duration_s)


def events_in_window(
    logged: Iterable[LoggedCheckpoint], started_epoch: float, until_epoch: float | None = None
) -> list[CheckpointEvent]:
    """The checkpoints that began between pgbench's start and `until_epoch` (none: no end yet)."""
    until = float("inf") if until_epoch is None else until_epoch
    return [checkpoint_event(c, started_epoch) for c in logged if started_epoch <= c.started_epoch <= until]


@dataclass(frozen=True)
class Checkpoints:
    """A measurement's checkpoints, as a run's environment stores them (environment["method"])."""

    timed: int | None  # None: the statistics could not be read
    requested: int | None
    source: str | None  # the statistics view: pg_stat_bgwriter, or pg_stat_checkpointer (PostgreSQL 17+)
    events: list[CheckpointEvent] | None  # None: not logged (log_checkpoints off) or the log unreadable

    def as_json(self) -> dict[str, Any]:
        events = None if self.events is None else [asdict(event) for event in self.events]
        return {"timed": self.timed, "requested": self.requested, "source": self.source, "events": events}


def read_checkpoints(
    transport: Transport, cluster: Cluster, stats: PgStatsDelta | None, started_epoch: float | None
) -> Checkpoints:
    """Once pgbench has ended (and before the cluster stops): the counts from the statistics'
    difference, the times from the server log up to now."""
    logging_on, _, now = psql(
        transport, cluster, "SELECT current_setting('log_checkpoints') || ' ' || extract(epoch FROM clock_timestamp())"
    ).partition(" ")
    events = None
    if logging_on == "on" and started_epoch is not None:
        patterns = [arg for line in _CHECKPOINT_LINES for arg in ("-e", line)]
        found = run_as_run_user(transport, ["grep", "-a", "-F", *patterns, "--", cluster.log_file], check=False)
        if found.exit_status in (0, 1):  # 1: no checkpoint logged at all
            events = events_in_window(parse_checkpoints(found.stdout), started_epoch, float(now))
    if stats is None:
        return Checkpoints(None, None, None, events)
    return Checkpoints(stats.checkpoints_timed, stats.checkpoints_requested, stats.checkpoints_source, events)


class CheckpointWatch:
    """Tells `on_event` each checkpoint of the measured window as the server logs its start
    and its end, while the block runs: the server log followed (from its start) until the
    block ends. `started_epoch` says when pgbench started once it has (None before: the
    checkpoints logged then are the load's). Best effort: a follower that fails is logged
    and the run goes on (the stored checkpoints are read from the log afterwards)."""

    def __init__(
        self,
        transport: Transport,
        connect: Callable[[], Transport],
        cluster: Cluster,
        work_dir: str,
        started_epoch: Callable[[], float | None],
        on_event: Callable[[CheckpointEvent], None],
        limit_s: float,
        max_reconnect_s: float = 300.0,
    ) -> None:
        self.transport, self.connect, self.cluster, self.work_dir = transport, connect, cluster, work_dir
        self.started_epoch, self.on_event = started_epoch, on_event
        self.limit_s, self.max_reconnect_s = limit_s, max_reconnect_s
        self.log = CheckpointLog()
        self.stopped = False  # from then on nothing more is told (a follower that could not be stopped)
        self.sentinel: Detached | None = None
        self.thread: threading.Thread | None = None

    def __enter__(self) -> "CheckpointWatch":
        # A name of its own: a reattaching worker's watch must not read the first one's files.
        name = f"checkpoint-watch-{secrets.token_hex(4)}"
        sleep = ["sleep", f"{self.limit_s:.0f}"]  # it ends by itself: a dead worker leaves nothing for ever
        try:
            self.sentinel = start_detached(self.transport, sleep, self.work_dir, name, user=RUN_USER)
        except Exception as exc:  # noqa: BLE001 - the measurement goes on without live markers
            log.warning("not following %s for checkpoints: %s", self.cluster.log_file, exc)
            return self
        follower = Follower(self.connect, self.sentinel, "log", self._line, max_reconnect_s=self.max_reconnect_s,
                            path=self.cluster.log_file)  # fmt: skip
        self.thread = threading.Thread(target=self._follow, args=(follower,), name="checkpoint-watch", daemon=True)
        self.thread.start()
        return self

    def _follow(self, follower: Follower) -> None:
        try:
            follower.follow(self.limit_s + 60)
        except Exception as exc:  # noqa: BLE001 - live markers are best effort; the stored ones are read later
            log.warning("stopped following %s for checkpoints: %s", self.cluster.log_file, exc)

    def _line(self, text: str) -> None:
        logged = self.log.feed(text)
        started = self.started_epoch()
        if logged is None or started is None or logged.started_epoch < started or self.stopped:
            return
        try:
            self.on_event(checkpoint_event(logged, started))
        except Exception as exc:  # noqa: BLE001 - a live event lost must not stop the follower
            log.warning("a checkpoint event was not told: %s", exc)

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        try:
            if self.sentinel is not None:
                cancel(self.transport, self.sentinel, grace_s=2.0)  # the follower reads the rest, then ends
            if self.thread is not None:
                self.thread.join(timeout=30)
        except Exception as exc:  # noqa: BLE001 - what ended the block is what the caller must hear of
            log.warning("could not stop following %s for checkpoints: %s", self.cluster.log_file, exc)
        finally:
            self.stopped = True
