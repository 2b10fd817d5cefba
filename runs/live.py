"""Live progress of runs: one event shape, one publisher, replayable from an id.

Events go to a Redis stream per run (and state changes also to one stream for the run list).
Stream ids are the event ids: a browser that reconnects sends the last id it saw
(Last-Event-ID) and gets exactly the events after it, none twice.
"""

import asyncio
import json
import logging
from dataclasses import dataclass
from functools import cache
from typing import Any

import redis
import redis.asyncio
from django.conf import settings

from runs.models import FINAL_STATES

log = logging.getLogger(__name__)

# A run publishes one sample a second plus its states and non-progress log lines: a week-long
# run (the longest the form allows) stays whole. A finished run's stream expires: its page
# draws from the database.
MAX_EVENTS_PER_RUN = 1_000_000
FINISHED_RUN_STREAM_TTL_S = 24 * 3600


def stream_prefix() -> str:
    # Per database: the test suite's runs (test_benchlab) never mix with a real benchlab's.
    return f"benchlab:{settings.DATABASES['default']['NAME']}"


def run_list_stream() -> str:
    return f"{stream_prefix()}:runs"


def run_stream(run_id: int) -> str:
    return f"{stream_prefix()}:run:{run_id}"


def reset_run_stream(run_id: int) -> None:
    """A new run starts with an empty stream (ids restart when a database is recreated); with
    Redis away there is nothing to empty, and queueing goes on."""
    try:
        client().delete(run_stream(run_id))
    except redis.RedisError as exc:
        log.warning("stream of run %s not reset: %s", run_id, exc)


@dataclass(frozen=True)
class LiveEvent:
    id: str
    kind: str  # "state", "sample", "log"
    data: dict[str, Any]


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


def client() -> redis.Redis:
    return _client(settings.REDIS_URL)


def publish(run_id: int, kind: str, data: dict[str, Any]) -> str:
    """Add an event to the run's stream; its id, or "" when Redis could not take it.

    Best-effort on purpose: what a run measures goes to PostgreSQL first, and a Redis restart
    must not fail a run. A page that missed events fills the gap from the database."""
    payload: dict[Any, Any] = {"kind": kind, "data": json.dumps(data)}
    try:
        event_id = client().xadd(run_stream(run_id), payload, maxlen=MAX_EVENTS_PER_RUN, approximate=True)
        if kind == "state":
            summary: dict[Any, Any] = {"kind": kind, "data": json.dumps(data | {"run": run_id})}
            client().xadd(run_list_stream(), summary, maxlen=10_000)
            if data.get("state") in FINAL_STATES:
                client().expire(run_stream(run_id), FINISHED_RUN_STREAM_TTL_S)
    except redis.RedisError as exc:
        log.warning("live event of run %s not published (%s): %s", run_id, kind, exc)
        return ""
    return event_id.decode() if isinstance(event_id, bytes) else str(event_id)


def _decode(entries: Any) -> list[LiveEvent]:
    return [
        LiveEvent(id=event_id.decode(), kind=fields[b"kind"].decode(), data=json.loads(fields[b"data"]))
        for event_id, fields in entries
    ]


def _newest_id(entries: Any) -> str:
    newest = _decode(entries)
    return newest[0].id if newest else "0-0"


def _range_start(after: str) -> str:
    return f"({after}" if after != "0-0" else "-"  # exclusive of `after`


def last_event_id(stream: str) -> str:
    """The id of the stream's newest event ("0-0" for none): where "from now on" starts."""
    return _newest_id(client().xrevrange(stream, count=1))


def events_after(stream: str, after: str = "0-0", count: int = 10_000) -> list[LiveEvent]:
    """The events after `after` (exclusive), oldest first."""
    return _decode(client().xrange(stream, min=_range_start(after), count=count))


class StreamReader:
    """One viewer's own connection to Redis, read without a thread of its own: the event
    stream (views.live) waits on Redis in the web server's event loop, so fifty viewers cost
    fifty sockets, not fifty threads (`make bench` measures it). A viewer who leaves cancels
    the stream's task; every command ends by honouring that (see _stop_if_cancelled)."""

    def __init__(self) -> None:
        self._redis = redis.asyncio.Redis.from_url(settings.REDIS_URL)

    async def __aenter__(self) -> "StreamReader":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._redis.aclose()

    async def last_event_id(self, stream: str) -> str:
        newest = await self._redis.xrevrange(stream, count=1)
        _stop_if_cancelled()
        return _newest_id(newest)

    async def events_after(self, stream: str, after: str, count: int = 10_000) -> list[LiveEvent]:
        entries = await self._redis.xrange(stream, min=_range_start(after), count=count)
        _stop_if_cancelled()
        return _decode(entries)

    async def wait(self, stream: str, after: str, block_ms: int) -> list[LiveEvent]:
        """The events after `after`, waiting up to block_ms for the first; [] if none came."""
        answer = await self._redis.xread({stream: after}, block=block_ms, count=10_000)
        _stop_if_cancelled()
        return _decode(answer[0][1]) if answer else []  # type: ignore[index]


def _stop_if_cancelled() -> None:
    """Raise the cancellation a Redis command lost. redis-py writes each command under
    asyncio.wait_for, which on Python 3.11 drops a cancel that arrives as the write completes
    (CPython gh-86296, fixed in 3.12): a viewer who closed the page within a millisecond of
    connecting left its stream polling Redis for as long as the server ran, and uvicorn could
    not stop gracefully. The task still counts the request, so the stream ends as it should."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


# ---- PostgreSQL builds (services.builds): a stream per build, the same event shape ----
# Kinds: "state" (as a run's), "step" {step, label, at}, "progress" {step, percent, eta_s}, "log".
# The final states' values are a run's (done, failed, cancelled), so a build's stream ends as a
# run's does (views.live).

MAX_EVENTS_PER_BUILD = 200_000  # a build's log is long (make prints a line a file), but not a week long


def build_stream(build_id: int) -> str:
    return f"{stream_prefix()}:build:{build_id}"


def reset_build_stream(build_id: int) -> None:
    """A new build starts with an empty stream (ids restart when a database is recreated)."""
    try:
        client().delete(build_stream(build_id))
    except redis.RedisError as exc:
        log.warning("stream of build %s not reset: %s", build_id, exc)


def publish_build(build_id: int, kind: str, data: dict[str, Any]) -> str:
    """Add an event to the build's stream; its id, or "" when Redis could not take it (best
    effort, as for runs: the build's record is in PostgreSQL, and its page reads it from there)."""
    payload: dict[Any, Any] = {"kind": kind, "data": json.dumps(data)}
    try:
        stream = build_stream(build_id)
        event_id = client().xadd(stream, payload, maxlen=MAX_EVENTS_PER_BUILD, approximate=True)
        if kind == "state" and data.get("state") in FINAL_STATES:
            client().expire(stream, FINISHED_RUN_STREAM_TTL_S)
    except redis.RedisError as exc:
        log.warning("live event of build %s not published (%s): %s", build_id, kind, exc)
        return ""
    return event_id.decode() if isinstance(event_id, bytes) else str(event_id)
