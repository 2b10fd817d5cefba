"""Drift: what changed in a host's or a device's recorded facts from one run to the next
(kernel, CPU, RAM, distribution, device model/firmware/size, PostgreSQL build).

Pure: given one host's or one device's runs in time order, each with the facts it recorded,
it says which fact changed, from what to what, between which two runs. A run that did not
record a fact (one from before benchlab recorded it, or whose probe failed) says nothing about
it: its silence is never a change, and the first run that records the fact is reported as
"recorded from run N on" instead.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Observation:
    """One run's facts. A key that is absent does not apply to the run (another PostgreSQL
    install's build); a key whose value is None or "" applies but was not recorded."""

    run_id: int
    at: datetime
    facts: Mapping[str, str | None]


@dataclass(frozen=True)
class RunPoint:
    run_id: int
    at: datetime


@dataclass(frozen=True)
class Change:
    fact: str
    old: str
    new: str
    before: RunPoint  # the last run that saw the old value
    after: RunPoint  # the first run that saw the new value

    def said(
        self, subject: str, *, fact: str = "", with_values: bool = True, between: str = "", where: str = ""
    ) -> str:
        """ "lab1: kernel changed from 6.1.0-25 to 6.1.0-26 between run 12 (3 Nov 2026) and run 15
        (9 Nov 2026)"; `fact` names the fact otherwise, without values only that it changed,
        `between` says between what in other words ("round 11 and 12" of a series), and `where` says
        the whole place ("during round 4": a change inside one round is between none)."""
        values = f" from {self.old} to {self.new}" if with_values else ""
        between = between or (
            f"run {self.before.run_id} ({_day(self.before.at)}) and run {self.after.run_id} ({_day(self.after.at)})"
        )
        return f"{subject}: {fact or self.fact} changed{values} {where or 'between ' + between}"


@dataclass(frozen=True)
class NotRecorded:
    """The fact was first recorded by run `since`; `earlier` runs before it did not record it."""

    fact: str
    since: RunPoint
    earlier: int


@dataclass(frozen=True)
class History:
    changes: list[Change]  # in time order
    not_recorded: list[NotRecorded]

    @property
    def not_recorded_together(self) -> list[tuple[list[str], RunPoint, int]]:
        """The notes of facts first recorded by the same run, together: ([facts], since, earlier)."""
        together: dict[tuple[RunPoint, int], list[str]] = {}
        for note in self.not_recorded:
            together.setdefault((note.since, note.earlier), []).append(note.fact)
        return [(facts, since, earlier) for (since, earlier), facts in together.items()]

    @property
    def latest(self) -> Change | None:
        return self.changes[-1] if self.changes else None


def _day(at: datetime) -> str:
    return f"{at.day} {at:%b %Y}"


def changes_of(observations: Sequence[Observation]) -> History:
    """The changes in the observations' facts, each fact followed on its own over the runs it
    applies to, in the observations' order (the caller sorts them by time)."""
    changes: list[Change] = []
    not_recorded: list[NotRecorded] = []
    # Per fact: its last recorded value and the run that last saw it, and how many runs that it
    # applied to had not recorded it before it was first seen.
    last: dict[str, tuple[str, RunPoint]] = {}
    unrecorded: dict[str, int] = {}
    for observation in observations:
        point = RunPoint(observation.run_id, observation.at)
        for fact, value in observation.facts.items():
            if value in (None, ""):
                if fact not in last:
                    unrecorded[fact] = unrecorded.get(fact, 0) + 1
                continue
            assert value is not None
            seen = last.get(fact)
            if seen is None:
                if unrecorded.get(fact):
                    not_recorded.append(NotRecorded(fact, point, unrecorded[fact]))
            elif seen[0] != value:
                changes.append(Change(fact, seen[0], value, seen[1], point))
            last[fact] = (value, point)
    return History(changes, not_recorded)


def spanned(changes: Sequence[Change], times: Sequence[datetime]) -> list[tuple[Change, int, int]]:
    """The changes that fall between the earliest and the latest of `times` (the compared runs'
    times on that host or device), with how many of those times lie before and after each."""
    found = []
    for change in changes:
        before = sum(1 for at in times if at <= change.before.at)
        after = sum(1 for at in times if at >= change.after.at)
        if before and after:
            found.append((change, before, after))
    return found
