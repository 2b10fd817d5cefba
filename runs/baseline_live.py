"""Live events of raw device baselines (fio): a stream per baseline, in the shape of a build's.

Kinds: "state" {state, label, at}, "step" {step, label, index, of, at} (the fio job running, by
the clock: fio runs them in one process and reports at its end), "progress" {percent, eta_s},
"log" {line}. Best effort, as runs' and builds' events (runs.live): the baseline's record is
in PostgreSQL and its page reads it from there.
"""

import json
import logging
from typing import Any

import redis

from runs import live
from runs.models import ENDED_BASELINE_STATES

log = logging.getLogger(__name__)

MAX_EVENTS_PER_BASELINE = 20_000  # a step and a progress point a second for a few hours


def baseline_stream(baseline_id: int) -> str:
    return f"{live.stream_prefix()}:baseline:{baseline_id}"  # per database, as runs' and builds' streams


def reset_baseline_stream(baseline_id: int) -> None:
    """A new baseline starts with an empty stream (ids restart when a database is recreated)."""
    try:
        live.client().delete(baseline_stream(baseline_id))
    except redis.RedisError as exc:
        log.warning("stream of baseline %s not reset: %s", baseline_id, exc)


def publish_baseline(baseline_id: int, kind: str, data: dict[str, Any]) -> str:
    """Add an event to the baseline's stream; its id, or "" when Redis could not take it."""
    payload: dict[Any, Any] = {"kind": kind, "data": json.dumps(data)}
    try:
        stream = baseline_stream(baseline_id)
        event_id = live.client().xadd(stream, payload, maxlen=MAX_EVENTS_PER_BASELINE, approximate=True)
        if kind == "state" and data.get("state") in ENDED_BASELINE_STATES:
            live.client().expire(stream, live.FINISHED_RUN_STREAM_TTL_S)
    except redis.RedisError as exc:
        log.warning("live event of baseline %s not published (%s): %s", baseline_id, kind, exc)
        return ""
    return event_id.decode() if isinstance(event_id, bytes) else str(event_id)
