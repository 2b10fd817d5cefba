"""The checkpoints PostgreSQL logged (log_checkpoints) in its server log. Pure: no I/O, no Django.

benchlab's throw-away cluster writes every line with a UTC time stamp to the millisecond
(log_line_prefix '%m [%p] ', log_timezone UTC: runs/lab/postgres/cluster.py):

    2026-11-27 08:57:36.314 UTC [32740] LOG:  checkpoint starting: wal
    2026-11-27 08:57:36.437 UTC [32740] LOG:  checkpoint complete: wrote 81 buffers (0.5%); ...; total=0.133 s; ...

"starting:" is followed by the checkpoint's flags, as PostgreSQL's LogCheckpointStart prints
them: shutdown, end-of-recovery, immediate (fast since 18), force, wait, wal, time, flush-all.
The checkpointer runs one checkpoint at a time, so a "complete" line ends the last one started.
An epoch prefix (%n) is read too; a line whose time zone is a name other than UTC's cannot be
placed in time and is skipped. Formats are pinned by captured logs under
runs/tests/fixtures/postgres15/.
"""

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone

_STAMPED = re.compile(
    r"^(?:(?P<epoch>\d{9,}\.\d+)|(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<zone>\S+)) .*?"
    r"\b(?:LOG|INFO):\s+checkpoint (?P<what>starting|complete): ?(?P<rest>.*)$"
)
_OFFSET = re.compile(r"(?P<sign>[+-])(?P<hours>\d\d):?(?P<minutes>\d\d)?")
_UTC_NAMES = {"UTC", "GMT", "Z", "UCT"}
_TOTAL = re.compile(r"\btotal=(\d+(?:\.\d+)?) s\b")


@dataclass(frozen=True)
class LoggedCheckpoint:
    started_epoch: float  # when its "checkpoint starting" line was written, as a Unix time
    flags: tuple[str, ...]  # ("wal",), ("time",), ("immediate", "force", "wait"), ...
    duration_s: float | None = None  # total= of its "checkpoint complete" line; None: not complete yet

    @property
    def kind(self) -> str:
        """Why it ran: "wal" (requested because WAL reached max_wal_size), "time" (checkpoint_timeout)
        or "other" (a CHECKPOINT command, a shutdown, ...). A WAL request that met the timeout is
        "wal": PostgreSQL counts it as requested, not timed."""
        if "wal" in self.flags:
            return "wal"
        return "time" if "time" in self.flags else "other"


def _epoch(match: re.Match[str]) -> float | None:
    if match["epoch"]:
        return float(match["epoch"])
    zone_name = match["zone"]
    if zone_name in _UTC_NAMES:
        zone = UTC
    elif offset := _OFFSET.fullmatch(zone_name):
        sign = -1 if offset["sign"] == "-" else 1
        zone = timezone(sign * timedelta(hours=int(offset["hours"]), minutes=int(offset["minutes"] or 0)))
    else:
        return None  # "CET": which offset it meant is not in the line
    stamp = datetime.strptime(match["time"], "%Y-%m-%d %H:%M:%S.%f" if "." in match["time"] else "%Y-%m-%d %H:%M:%S")
    return stamp.replace(tzinfo=zone).timestamp()


class CheckpointLog:
    """The checkpoints of a log read line by line, from its start or as a follower hands the
    lines over: `feed` says which checkpoint a line started or completed."""

    def __init__(self) -> None:
        self.checkpoints: list[LoggedCheckpoint] = []
        self._open = False  # the last one started has no "complete" line yet

    def feed(self, line: str) -> LoggedCheckpoint | None:
        """The checkpoint this line starts or completes (with its duration); None for any other line."""
        match = _STAMPED.match(line)
        if match is None:
            return None
        if match["what"] == "starting":
            epoch = _epoch(match)
            self._open = epoch is not None
            if epoch is None:
                return None
            self.checkpoints.append(LoggedCheckpoint(epoch, tuple(match["rest"].split())))
            return self.checkpoints[-1]
        total = _TOTAL.search(match["rest"])
        if not self._open or total is None:
            return None  # the log (or the part followed) began after it started
        self._open = False
        self.checkpoints[-1] = replace(self.checkpoints[-1], duration_s=float(total.group(1)))
        return self.checkpoints[-1]


def parse_checkpoints(text: str) -> list[LoggedCheckpoint]:
    """Every checkpoint the log's text records, in order."""
    log = CheckpointLog()
    for line in text.splitlines():
        log.feed(line)
    return log.checkpoints
