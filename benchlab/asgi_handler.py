"""The ASGI handler uvicorn serves (benchlab/asgi.py): Django's own, except that a response which
stays open for as long as someone watches (a live event stream) does not keep a thread for it.

Django runs each request in a ThreadSensitiveContext of its own: the request's first sync step
(the request_started signal, before any middleware) starts a thread for that request, and the
thread lives until the response ends. For a page that is milliseconds; for an event stream it
is as long as the browser watches, so fifty viewers held fifty idle threads. A request for a
view marked `long_lived` runs outside such a context: its few short sync steps (the
middleware's halves, the session, the user, one query) take turns on asgiref's one shared sync
thread, and the stream itself waits on Redis in the event loop (runs.jobs.live.StreamReader).
Everything else is Django's, as for any page: the middleware, the login redirect, the headers,
and the cancelling of a stream whose client went away.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.urls import Resolver404, resolve

View = TypeVar("View", bound=Callable[..., Any])
Receive = Callable[[], Any]
Send = Callable[[Any], Any]

_MARK = "long_lived_response"


def long_lived(view: View) -> View:
    """Mark a view whose response stays open (server-sent events): it is served without a
    thread of its own. Its sync steps must stay short: they wait in line with every other
    long-lived request's on the one shared thread."""
    setattr(view, _MARK, True)
    return view


def is_long_lived(path_info: str) -> bool:
    try:
        match = resolve(path_info)
    except Resolver404:
        return False
    return getattr(match.func, _MARK, False) is True


class BenchlabASGIHandler(ASGIHandler):
    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_long_lived(_path_info(scope)):
            await self.handle(scope, receive, send)  # without ThreadSensitiveContext: see above
        else:
            await super().__call__(scope, receive, send)


def _path_info(scope: dict[str, Any]) -> str:
    # As ASGIRequest makes it: the path below the script prefix (FORCE_SCRIPT_NAME or root_path).
    prefix = get_script_prefix(scope)
    return scope["path"].removeprefix(prefix) if prefix else scope["path"]
