"""Live event streams: a viewer costs the web process (uvicorn, scripts/web) a Redis connection
and nothing else, no thread and no database connection of its own (benchlab/asgi_handler.py),
and a viewer who leaves, at any moment, takes its Redis connection with it. (How many one person
may hold, and for how long: test_stream_limits.py.)"""

import asyncio
import http.client
import os
from collections.abc import Callable

import pytest
from django.test import Client

from runs.jobs import live
from runs.lab.transport.waiting import wait_until
from runs.models import RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.web_server import WebServer, connections_to, redis_port, uvicorn

VIEWERS = 20
SHARED_REDIS = 1  # the process's pooled connection (runs.jobs.live.client), whatever the viewers
SLACK = 3  # threads or database connections the process may add while serving: shared ones, not one a viewer


def viewer_session(username: str = "vera") -> str:
    client = Client()
    client.force_login(make_user(username, "viewer"))
    return client.cookies["sessionid"].value


def open_stream(server: WebServer, path: str, session: str) -> http.client.HTTPConnection:
    """A browser's EventSource on `path`, once the stream has begun."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", path, headers={"Cookie": f"sessionid={session}", "Accept": "text/event-stream"})
    response = connection.getresponse()
    assert response.status == 200, response.read()
    assert response.getheader("Content-Type") == "text/event-stream"
    assert response.readline() == b"retry: 2000\n"
    return connection


def eventually(condition: Callable[[], bool], what: str, timeout_s: float = 15) -> None:
    assert wait_until(condition, timeout_s, 0.1), f"not within {timeout_s:.0f} s: {what}"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_twenty_viewers_cost_no_thread_nor_database_connection_and_leave_no_redis_connection() -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING)
    path = f"/runs/{run.pk}/events"
    sessions = [viewer_session(f"viewer{number}") for number in range(VIEWERS)]  # twenty people

    with uvicorn() as server:
        # One viewer first: what every stream shares (the sync thread, its database connection, the
        # pooled Redis connection that counts streams, runs.jobs.stream_slots) exists from then on, and
        # is counted as idle.
        first = open_stream(server, path, sessions[0])
        eventually(lambda: server.redis_connections() == SHARED_REDIS + 1, "the first viewer waiting on Redis")
        first.close()
        eventually(lambda: server.redis_connections() == SHARED_REDIS, "the first viewer's Redis connection closed")
        idle_threads, idle_database = server.threads(), server.database_connections()

        streams = [open_stream(server, path, session) for session in sessions]
        eventually(lambda: server.redis_connections() == SHARED_REDIS + VIEWERS, f"{VIEWERS} viewers waiting on Redis")
        serving_threads, serving_database = server.threads(), server.database_connections()

        for stream in streams:
            stream.close()
        eventually(lambda: server.redis_connections() == SHARED_REDIS, "every viewer's Redis connection closed")

    assert serving_threads - idle_threads < SLACK, f"{idle_threads} threads idle, {serving_threads} serving"
    assert serving_database - idle_database < SLACK, f"{idle_database} database connections idle, {serving_database}"


async def follow(stream: str) -> None:
    """What a stream does while nothing comes (views.live): wait on Redis, again and again (for
    50 ms here, not a second: a lost cancel is honoured when the wait ends)."""
    async with live.StreamReader() as reader:
        while True:
            await reader.wait(stream, "0-0", block_ms=50)


def test_a_stream_whose_viewer_leaves_at_any_moment_stops_and_closes_its_redis_connection() -> None:
    """A viewer who leaves cancels the stream's task, sometimes while its first command is being
    written: on Python 3.11 that cancel was lost (runs.jobs.live._stop_if_cancelled), and the stream
    polled Redis for as long as the server ran."""

    async def leave_after(delay_s: float) -> bool:
        task = asyncio.create_task(follow(f"{live.stream_prefix()}:nothing-comes"))
        await asyncio.sleep(0)  # the stream begins: it connects to Redis and writes its first command
        await asyncio.sleep(delay_s)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2)
        return task in done

    async def first_moment_left_polling() -> float | None:
        # Over the first half millisecond, while the first command is connected and written.
        for delay_s in [step * 0.000_05 for step in range(10)] * 10:
            if not await leave_after(delay_s):
                return delay_s
        return None

    before = connections_to(os.getpid(), redis_port())  # the test's own client, the fixtures'
    left_polling = asyncio.run(first_moment_left_polling())

    assert left_polling is None, f"a viewer who left after {left_polling * 1000:.2f} ms left its stream polling"
    assert connections_to(os.getpid(), redis_port()) == before
