"""Server-sent events: a run's events (samples, states, log lines) and the run list's states; a
PostgreSQL build's and a fio baseline's, the same way.

Replayable by id: the browser's EventSource sends Last-Event-ID when it reconnects, and a
page opened mid-run asks from the start, so every point arrives, none twice. Each view is
`long_lived` (benchlab/asgi_handler.py): a viewer costs a socket to Redis, not a thread.

Bounded: a person holds at most BENCHLAB_MAX_STREAMS_PER_USER streams at once, across every web
process (runs/jobs/stream_slots.py; one more is answered 429, saying so), and a stream ends after
BENCHLAB_STREAM_MAX_AGE_S with a "renew" event; the browser reconnects by itself and resumes
after the last id it saw. Streams need the viewer role, so every one has a user to count it
against (shared links have no live stream).
"""

import json
import time
from collections.abc import AsyncIterator, Collection

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, HttpResponseNotFound, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from benchlab.asgi_handler import long_lived
from runs.common.params import BadParameter, parse_event_id
from runs.jobs import live, stream_slots
from runs.jobs.kinds import BASELINE, BUILD, KINDS, RUN, JobKind

POLL_BLOCK_MS = 1000
KEEPALIVE_EVERY = 15  # blocks without events before a comment line keeps proxies from closing


async def _forbidden_unless_viewer(request: HttpRequest) -> HttpResponse | None:
    # Answered, not raised: a PermissionDenied is logged with a traceback, and browsers retry streams.
    user = await request.auser()
    if not await user.ahas_perm("runs.view_host"):
        return HttpResponseForbidden("You need the viewer role to follow runs.", content_type="text/plain")
    return None


def _format(event: live.LiveEvent) -> str:
    return f"id: {event.id}\nevent: {event.kind}\ndata: {json.dumps(event.data)}\n\n"


def _is_final(event: live.LiveEvent, final_states: Collection[str]) -> bool:
    return event.kind == "state" and event.data.get("state") in final_states


async def _stream(
    stream: str, after: str, final_states: Collection[str], finished: bool, slot: stream_slots.Slot
) -> AsyncIterator[str]:
    """_events, giving the stream's slot back however it ends (a viewer who leaves cancels it
    inside _events): before the end reaches the browser, so its reconnect finds the slot free."""
    try:
        async for chunk in _events(stream, after, final_states, finished):
            yield chunk
    finally:
        await sync_to_async(slot.give_back)()


def _renew(after: str, max_age_s: float) -> str:
    """The planned end: its id is where the stream had read to, so the browser's reconnect resumes
    there even if no event came (a stream that began at "$"); the page knows not to fill a gap."""
    return f"id: {after}\nevent: renew\ndata: {json.dumps({'max_age_s': max_age_s})}\n\n"


async def _events(stream: str, after: str, final_states: Collection[str], finished: bool) -> AsyncIterator[str]:
    """Events after `after`, up to a state in final_states (none: endless, but ended after the
    maximum age); with `finished` (the run or build had ended when asked) only what is stored."""
    max_age_s = settings.BENCHLAB_STREAM_MAX_AGE_S
    ends_at = time.monotonic() + max_age_s
    yield "retry: 2000\n\n"
    async with live.StreamReader() as reader:
        if after == "$":  # only what comes from now on: fixed once, so nothing between two reads is lost
            after = await reader.last_event_id(stream)
        else:
            for event in await reader.events_after(stream, after):
                after = event.id
                yield _format(event)
                if _is_final(event, final_states):
                    return
        if finished:
            return  # nothing more will come (its stream may have expired: the page draws from the database)
        idle = 0
        while True:
            if time.monotonic() >= ends_at:
                yield _renew(after, max_age_s)
                return
            events = await reader.wait(stream, after, POLL_BLOCK_MS)
            if not events:
                idle += 1
                if idle >= KEEPALIVE_EVERY:
                    idle = 0
                    yield ": keep-alive\n\n"
                continue
            idle = 0
            for event in events:
                after = event.id
                yield _format(event)
                if _is_final(event, final_states):
                    return


def _last_event_id(request: HttpRequest, default: str) -> str:
    """Where to resume: the browser's Last-Event-ID on a reconnect, else ?after=, else default."""
    if last_seen := request.headers.get("Last-Event-ID"):
        return parse_event_id(last_seen, "Last-Event-ID")
    if after := request.GET.get("after"):
        return parse_event_id(after, "after")
    return default


class _EventStreamResponse(StreamingHttpResponse):
    """Gives the stream's slot back when Django closes the response: also when the viewer left
    before the stream's first event, and so before _stream began (its `finally` never runs)."""

    def __init__(self, events: AsyncIterator[str], slot: stream_slots.Slot) -> None:
        super().__init__(events, content_type="text/event-stream")
        self._slot = slot
        self["Cache-Control"] = "no-cache"
        self["X-Accel-Buffering"] = "no"

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._slot.give_back()


def _too_many_streams(cap: int) -> HttpResponse:
    return HttpResponse(
        f"You already have {cap} live {'view' if cap == 1 else 'views'} open, the most one person may have at "
        "once (the pages of runs, builds, baselines and campaigns and the run list each keep one while open). "
        "Close a page you no longer watch, then reload this one.",
        status=429,
        content_type="text/plain; charset=utf-8",
    )


async def _event_stream(
    request: HttpRequest, stream: str, after: str, final_states: Collection[str] = (), finished: bool = False
) -> HttpResponseBase:
    """The stream, if the user has a slot left for it."""
    user = await request.auser()
    assert user.pk is not None, "every view asks for the viewer role first: a stream has a user"
    cap = settings.BENCHLAB_MAX_STREAMS_PER_USER
    lease_s = settings.BENCHLAB_STREAM_MAX_AGE_S + stream_slots.LEASE_MARGIN_S
    slot = await sync_to_async(stream_slots.take)(user.pk, cap, lease_s)
    if slot is None:
        return _too_many_streams(cap)
    return _EventStreamResponse(_stream(stream, after, final_states, finished, slot), slot)


def _bad_request(exc: BadParameter) -> HttpResponse:
    return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")


async def _job_events(request: HttpRequest, kind: JobKind, job_id: int) -> HttpResponseBase:
    """A job's events (jobs.kinds; runs.jobs.live says which), from the start or where the browser
    left off; its stream ends with the job."""
    if refused := await _forbidden_unless_viewer(request):
        return refused
    state = await kind.model._default_manager.filter(pk=job_id).values_list("state", flat=True).afirst()
    if state is None:
        return HttpResponseNotFound(f"There is no {kind.name} {job_id}.", content_type="text/plain")
    try:
        after = _last_event_id(request, "0-0")
    except BadParameter as exc:
        return _bad_request(exc)
    stream, ended = live.job_stream(kind.name, job_id), kind.ended_states
    return await _event_stream(request, stream, after, ended, finished=state in ended)


@long_lived
@require_GET
async def run_events(request: HttpRequest, run_id: int) -> HttpResponseBase:
    return await _job_events(request, KINDS[RUN], run_id)


@long_lived
@require_GET
async def runs_events(request: HttpRequest) -> HttpResponseBase:
    if refused := await _forbidden_unless_viewer(request):
        return refused
    # The page says where it was rendered (?after=): states that change before the browser
    # connects still arrive.
    try:
        after = _last_event_id(request, "$")
    except BadParameter as exc:
        return _bad_request(exc)
    return await _event_stream(request, live.run_list_stream(), after)


@long_lived
@require_GET
async def build_events(request: HttpRequest, build_id: int) -> HttpResponseBase:
    """A PostgreSQL build's events (states, steps, make's progress, log lines), as a run's."""
    return await _job_events(request, KINDS[BUILD], build_id)


@long_lived
@require_GET
async def baseline_events(request: HttpRequest, baseline_id: int) -> HttpResponseBase:
    """A fio baseline's events (states, which job by the clock, progress, log lines), as a build's."""
    return await _job_events(request, KINDS[BASELINE], baseline_id)
