"""Server-sent events: a run's events (samples, states, log lines) and the run list's states.

Replayable by id: the browser's EventSource sends Last-Event-ID when it reconnects, and a
page opened mid-run asks from the start, so every point arrives, none twice.
"""

import asyncio
import json
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, StreamingHttpResponse

from runs import live
from runs.models import FINAL_STATES

POLL_BLOCK_MS = 1000
KEEPALIVE_EVERY = 15  # blocks without events before a comment line keeps proxies from closing


async def _require_viewer(request: HttpRequest) -> None:
    user = await request.auser()
    if not await sync_to_async(user.has_perm)("runs.view_host"):
        raise PermissionDenied


def _format(event: live.LiveEvent) -> str:
    return f"id: {event.id}\nevent: {event.kind}\ndata: {json.dumps(event.data)}\n\n"


def _is_final(event: live.LiveEvent) -> bool:
    return event.kind == "state" and event.data.get("state") in FINAL_STATES


async def _stream(stream: str, after: str, stop_after_final: bool) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    if after == "$":  # only what comes from now on: fixed once, so nothing between two reads is lost
        after = await sync_to_async(live.last_event_id)(stream)
    else:
        for event in await sync_to_async(live.events_after)(stream, after):
            after = event.id
            yield _format(event)
            if stop_after_final and _is_final(event):
                return
    idle = 0
    while True:
        events = await asyncio.to_thread(live.wait_for_events, stream, after, POLL_BLOCK_MS)
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
            if stop_after_final and _is_final(event):
                return


def _last_event_id(request: HttpRequest, default: str) -> str:
    """Where to resume: the browser's Last-Event-ID on a reconnect, else ?after=, else default."""
    raw = request.headers.get("Last-Event-ID") or request.GET.get("after") or default
    return raw if all(part.isdigit() for part in raw.split("-", 1)) else default


async def run_events(request: HttpRequest, run_id: int) -> StreamingHttpResponse:
    await _require_viewer(request)
    response = StreamingHttpResponse(
        _stream(live.run_stream(run_id), _last_event_id(request, "0-0"), stop_after_final=True),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


async def runs_events(request: HttpRequest) -> StreamingHttpResponse:
    await _require_viewer(request)
    # The page says where it was rendered (?after=): states that change before the browser
    # connects still arrive.
    after = _last_event_id(request, "$")
    response = StreamingHttpResponse(_stream(live.run_list_stream(), after, stop_after_final=False),
                                     content_type="text/event-stream")  # fmt: skip
    response["Cache-Control"] = "no-cache"
    return response
