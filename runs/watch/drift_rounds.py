"""A series' drift events placed among its rounds (pure): a change on a host or device is put by
the runs it was seen between - the last run with the old value, the first with the new - read as
the rounds that hold them. Not by the rounds' start times: a kernel changed between two
repetitions of round 7 would read "between round 7 and 8", and one inside the last round "rounds N
and N". It reads "during round 7"."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runs.compare.selectors.drift import SpannedChange


@dataclass(frozen=True)
class DriftEvent:
    round_before: int  # the round of the last run that saw the old value
    round_after: int  # the round of the first that saw the new one (the same: it changed during it)
    text: str  # "lab1: kernel changed from A to B between round 11 and 12"


def where_in_rounds(before: int, after: int) -> str:
    """ "during round 4", "between round 6 and 7", "between rounds 3 and 6" (the rounds between
    did not record the fact)."""
    if before == after:
        return f"during round {before}"
    return f"between round {before} and {after}" if after == before + 1 else f"between rounds {before} and {after}"


def drift_events(spanned: Sequence[SpannedChange], round_of: Mapping[int, int]) -> list[DriftEvent]:
    """Each change among the series' runs as an event between (or during) rounds, in round order;
    `round_of`: each run's round number, by run id."""
    events = []
    for found in spanned:
        before, after = round_of.get(found.change.before.run_id), round_of.get(found.change.after.run_id)
        if before is None or after is None:
            continue  # drift_among reads the series' own runs; a run outside them places nothing
        events.append(DriftEvent(before, after, found.said_where(where_in_rounds(before, after))))
    return sorted(events, key=lambda e: (e.round_before, e.text))
