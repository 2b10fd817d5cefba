"""Live events of raw device baselines (fio): a stream per baseline, in the shape of a build's.

Kinds: "state" {state, label, at}, "step" {step, label, index, of, at} (the fio job running, by
the clock: fio runs them in one process and reports at its end), "progress" {percent, eta_s},
"log" {line}. Best effort, as runs' and builds' events (runs.live): the baseline's record is
in PostgreSQL and its page reads it from there.
"""

import logging
from typing import Any

from runs import live
from runs.models import ENDED_BASELINE_STATES

log = logging.getLogger(__name__)

MAX_EVENTS_PER_BASELINE = 20_000  # a step and a progress point a second for a few hours


def baseline_stream(baseline_id: int) -> str:
    return live.job_stream("baseline", baseline_id)


def reset_baseline_stream(baseline_id: int) -> None:
    live.reset_stream(baseline_stream(baseline_id), f"baseline {baseline_id}")


def publish_baseline(baseline_id: int, kind: str, data: dict[str, Any]) -> str:
    """Add an event to the baseline's stream; its id, or "" when Redis could not take it."""
    ended = kind == "state" and data.get("state") in ENDED_BASELINE_STATES
    stream = baseline_stream(baseline_id)
    return live.publish_to(stream, kind, data, MAX_EVENTS_PER_BASELINE, ended, f"baseline {baseline_id}")
