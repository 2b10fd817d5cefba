"""Live progress of jobs (runs, PostgreSQL builds, fio baselines: runs.jobs.kinds): one event
shape, one publisher, replayable from an id.

Events go to a Redis stream per job (and a run's state changes also to one stream for the run
list). Stream ids are the event ids: a browser that reconnects sends the last id it saw
(Last-Event-ID) and gets exactly the events after it, none twice.

Events, by kind of job: every job's "state" {state, label, at} and "log" {line}; a run's
"sample", "client_sample" and "checkpoint" {second, kind, duration_s} (at its start, and again at
its end); a build's "step" {step, label, at} and "progress" {step, percent,
eta_s}; a baseline's "step" {step, label, index, of, at} (the fio job running, by the clock: fio
runs them in one process and reports at its end) and "progress" {percent, eta_s, step}.
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
from django.db import models
from django.utils import timezone

from benchlab.redis_keys import redis_prefix
from runs.jobs.kinds import BASELINE, BUILD, KINDS, RUN, kind_of

log = logging.getLogger(__name__)

# How many events a job's stream keeps, by kind. A run publishes one sample a second plus its
# states and non-progress log lines: a week-long run (the longest the form allows) stays whole.
# A build's log is long (make prints a line a file), but not a week long. A baseline publishes a
# step and a progress point a second for a few hours.
MAX_EVENTS = {RUN: 1_000_000, BUILD: 200_000, BASELINE: 20_000}
# An ended job's stream expires: its page draws from the database.
FINISHED_RUN_STREAM_TTL_S = 24 * 3600
RUN_LIST_EVENTS = 10_000  # state changes for the run list page: it only needs the recent ones


def stream_prefix() -> str:
    return redis_prefix(settings.DATABASES["default"]["NAME"])


def run_list_stream() -> str:
    return f"{stream_prefix()}:runs"


def job_stream(kind: str, job_id: int) -> str:
    """The stream of one job's events; kind is run, build or baseline."""
    return f"{stream_prefix()}:{kind}:{job_id}"


def reset_stream(stream: str, what: str) -> None:
    """A new job starts with an empty stream (ids restart when a database is recreated); with
    Redis away there is nothing to empty, and queueing goes on."""
    try:
        client().delete(stream)
    except redis.RedisError as exc:
        log.warning("stream of %s not reset: %s", what, exc)


def publish_to(stream: str, kind: str, data: dict[str, Any], max_events: int, ended: bool, what: str) -> str:
    """Add an event to a job's stream (kept for a day once the job has `ended`); its id, or ""
    when Redis could not take it. Best effort on purpose: what a job measures goes to
    PostgreSQL first, a Redis restart must not fail it, and a page that missed events reads
    them from the database."""
    payload: dict[Any, Any] = {"kind": kind, "data": json.dumps(data)}
    try:
        event_id = client().xadd(stream, payload, maxlen=max_events, approximate=True)
        if ended:
            client().expire(stream, FINISHED_RUN_STREAM_TTL_S)
    except redis.RedisError as exc:
        log.warning("live event of %s not published (%s): %s", what, kind, exc)
        return ""
    return event_id.decode() if isinstance(event_id, bytes) else str(event_id)


def reset_job_stream(kind: str, job_id: int) -> None:
    reset_stream(job_stream(kind, job_id), f"{kind} {job_id}")


def run_stream(run_id: int) -> str:
    return job_stream(RUN, run_id)


def reset_run_stream(run_id: int) -> None:
    reset_job_stream(RUN, run_id)


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


def publish_job(kind: str, job_id: int, event: str, data: dict[str, Any]) -> str:
    """Add an event to the stream of job `job_id` of `kind` (jobs.kinds), and a run's state
    change also to the run list's; the event's id, or "" when Redis could not take it
    (publish_to says why that is fine)."""
    ended = event == "state" and data.get("state") in KINDS[kind].ended_states
    what = f"{kind} {job_id}"
    event_id = publish_to(job_stream(kind, job_id), event, data, MAX_EVENTS[kind], ended, what)
    if kind == RUN and event == "state":
        publish_to(run_list_stream(), event, data | {"run": job_id}, RUN_LIST_EVENTS, False, "the run list")
    return event_id


def publish_state(job: models.Model, state: models.TextChoices, **extra: Any) -> str:
    """A job's new state, as its page (and a run's, the run list) shows it."""
    data = {"state": state.value, "label": state.label, "at": timezone.now().isoformat()} | extra
    return publish_job(kind_of(job).name, job.pk, "state", data)


def publish(run_id: int, event: str, data: dict[str, Any]) -> str:
    """publish_job for a run (most events are a run's)."""
    return publish_job(RUN, run_id, event, data)


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
