"""Live event streams are bounded: a person holds at most BENCHLAB_MAX_STREAMS_PER_USER at once,
counted across every web process (one more is answered 429, saying so), and a stream ends after
BENCHLAB_STREAM_MAX_AGE_S; the viewer reconnects with Last-Event-ID and gets every event once.
Read over HTTP from uvicorn (scripts/web), as a browser's EventSource reads them."""

import http.client
import json
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field

import pytest
from django.test import Client

from runs.jobs import live, stream_slots
from runs.lab.fio.plan import MiB
from runs.lab.transport.waiting import wait_until
from runs.models import BaselineState, BuildState, DeviceBaseline, Run, RunState
from runs.tests.baselines.test_browser_baselines import JOBS
from runs.tests.builds.test_browser_builds import make_build
from runs.tests.common.test_live_streams import eventually
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.web_server import WebServer, uvicorn
from runs.views.live import _EventStreamResponse, _stream

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def session_of(username: str) -> str:
    client = Client()
    client.force_login(make_user(username, "viewer"))
    return client.cookies["sessionid"].value


def request_stream(
    server: WebServer, path: str, session: str, last_event_id: str = ""
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"Cookie": f"sessionid={session}", "Accept": "text/event-stream"}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    connection.request("GET", path, headers=headers)
    return connection, connection.getresponse()


def opened(server: WebServer, path: str, session: str) -> http.client.HTTPConnection:
    connection, response = request_stream(server, path, session)
    assert response.status == 200, response.read()
    assert response.readline() == b"retry: 2000\n"
    return connection


def refusal(server: WebServer, path: str, session: str) -> tuple[int, str]:
    connection, response = request_stream(server, path, session)
    with closing(connection):
        return response.status, response.read().decode()


def live_run() -> Run:
    host = make_host()
    return make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING)


def stream_paths() -> list[str]:
    """One of each stream the pages open: a run's, the run list's, a build's, a baseline's."""
    run = live_run()
    build = make_build(run.server_host, state=BuildState.BUILDING)
    baseline = DeviceBaseline.objects.create(
        device=run.device,
        host=run.server_host,
        size_bytes=64 * MiB,
        runtime_s=10,
        ramp_s=0,
        jobs=JOBS,
        state=BaselineState.RUNNING,
    )
    return [f"/runs/{run.pk}/events", "/runs/events", f"/builds/{build.pk}/events", f"/baselines/{baseline.pk}/events"]


@LIVE
def test_a_person_past_the_cap_is_refused_on_every_stream_saying_why_and_others_are_not() -> None:
    paths = stream_paths()
    vera, olga = session_of("vera"), session_of("olga")

    with uvicorn(BENCHLAB_MAX_STREAMS_PER_USER="3") as server:
        held = [opened(server, path, vera) for path in paths[:3]]
        refusals = [refusal(server, path, vera) for path in paths]
        others = opened(server, paths[0], olga)  # her own three
        held[0].close()  # a viewer who leaves gives the slot back
        eventually(lambda: refusal_or_open(server, paths[3], vera), "vera's closed stream's slot given back")
        for connection in [*held, others]:
            connection.close()

    for status, message in refusals:
        assert status == 429, message
        assert "You already have 3 live views open, the most one person may have at once" in message
        assert "Close a page you no longer watch, then reload this one." in message


def refusal_or_open(server: WebServer, path: str, session: str) -> bool:
    """Whether the stream opens now (it is then closed again)."""
    connection, response = request_stream(server, path, session)
    with closing(connection):
        return response.status == 200


@LIVE
def test_the_cap_counts_streams_across_every_web_process() -> None:
    run = live_run()
    path, vera = f"/runs/{run.pk}/events", session_of("vera")

    with uvicorn(BENCHLAB_MAX_STREAMS_PER_USER="2") as first, uvicorn(BENCHLAB_MAX_STREAMS_PER_USER="2") as second:
        held = [opened(first, path, vera), opened(second, path, vera)]
        on_first, on_second = refusal(first, path, vera), refusal(second, path, vera)
        for connection in held:
            connection.close()

    assert on_first[0] == on_second[0] == 429


def stream_readers(server: WebServer) -> int:
    """The server's connections that Redis says last read an event stream: one per open stream
    (runs.jobs.live.StreamReader), told apart from the process's shared one, which counts slots.
    Counting all the server's connections was not enough: under CI's load it saw seven beside the
    shared one, never eight, in 15 s (29 Nov 2026), with no way to tell which was missing."""
    ports = server.redis_ports()
    readers = ("xread", "xrevrange", "xrange")
    clients = live.client().client_list()
    return sum(int(c["addr"].rsplit(":", 1)[1]) in ports and c["cmd"] in readers for c in clients)


@LIVE
def test_streams_of_one_person_hold_at_most_the_cap_in_redis_connections() -> None:
    """The resource the cap protects: 20 streams asked for by one viewer hold 8 connections to
    Redis (the broker), not 20."""
    run = live_run()
    path, vera = f"/runs/{run.pk}/events", session_of("vera")

    with uvicorn(BENCHLAB_MAX_STREAMS_PER_USER="8") as server:
        opened(server, path, vera).close()  # what the process shares exists from then on: the slots' pool
        eventually(lambda: stream_readers(server) == 0, "no stream reading Redis")
        shared = server.redis_connections()
        answers = [request_stream(server, path, vera) for _ in range(20)]
        try:
            statuses = sorted(response.status for _, response in answers)
            waiting = wait_until(lambda: stream_readers(server) == 8, 30, 0.1)
            time.sleep(1)  # and no more after a while: eight is not a count on its way to twenty
            readers, connections = stream_readers(server), server.redis_connections()
            assert waiting and readers == 8, f"not within 30 s: eight streams reading Redis ({readers}; {statuses})"
            assert connections <= shared + 8, (connections, shared)  # nothing else of the streams'
        finally:
            # Closed whatever happened: uvicorn waits for open streams before it exits, and that
            # wait's timeout would hide this test's own failure (CI, 28 Nov 2026, under load).
            for connection, _ in answers:
                connection.close()
        eventually(lambda: stream_readers(server) == 0, "every stream's connection closed")

    assert statuses == [200] * 8 + [429] * 12


def test_a_slot_whose_process_died_lapses_with_its_lease() -> None:
    """A web process killed mid-stream never gives its slot back: the lease ends it."""
    key = stream_slots.slots_key(10**9)
    live.client().delete(key)
    kept = stream_slots.take(10**9, cap=1, lease_s=0.3)  # never given back

    refused = stream_slots.take(10**9, cap=1, lease_s=0.3)
    time.sleep(0.4)
    after_lease = stream_slots.take(10**9, cap=1, lease_s=0.3)
    live.client().delete(key)

    assert kept is not None and refused is None and after_lease is not None


# Closing a response sends request_finished, whose close_old_connections looks at a database
# connection that an earlier test of this process may have opened: allowed, or the test's outcome
# would depend on which tests ran before it in its worker.
@pytest.mark.django_db
def test_a_stream_whose_viewer_left_before_it_began_gives_its_slot_back_when_django_closes_it() -> None:
    """Its generator never ran, so only the response's close (which Django's ASGI handler calls
    after a disconnect) can give the slot back."""
    user_id = 10**9 + 1
    live.client().delete(stream_slots.slots_key(user_id))
    slot = stream_slots.take(user_id, cap=1, lease_s=60)
    assert slot is not None
    never_read = _stream("unused", "0-0", (), False, slot)

    _EventStreamResponse(never_read, slot).close()

    assert stream_slots.held(user_id) == 0


@dataclass
class Viewer:
    """A browser's EventSource: reads events, reconnects after the server ends the stream (after
    `retry` ms) sending the last id it saw."""

    server: WebServer
    path: str
    session: str
    seconds: list[int] = field(default_factory=list)
    renewals: int = 0
    reconnects: int = 0
    last_id: str = ""

    def follow_until(self, last_second: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while last_second not in self.seconds:
            assert time.monotonic() < deadline, f"saw {len(self.seconds)} samples, not up to {last_second}"
            connection, response = request_stream(self.server, self.path, self.session, self.last_id)
            assert response.status == 200, response.read()
            with closing(connection):
                self._read(response, last_second)
            if last_second not in self.seconds:
                self.reconnects += 1
                time.sleep(2.0)  # the stream's retry: 2000

    def _read(self, response: http.client.HTTPResponse, last_second: int) -> None:
        for event_id, kind, data in events(response):
            self.last_id = event_id or self.last_id
            if kind == "sample":
                self.seconds.append(json.loads(data)["second"])
                if self.seconds[-1] == last_second:
                    return
            elif kind == "renew":
                self.renewals += 1


def events(response: http.client.HTTPResponse) -> Iterator[tuple[str, str, str]]:
    """(id, event, data) of each event until the server ends the stream."""
    event_id = kind = data = ""
    while line := response.readline():
        text = line.decode().rstrip("\n")
        if text.startswith("id: "):
            event_id = text[4:]
        elif text.startswith("event: "):
            kind = text[7:]
        elif text.startswith("data: "):
            data = text[6:]
        elif not text and kind:
            yield event_id, kind, data
            event_id = kind = data = ""


def publish_samples(run_id: int, count: int, every_s: float) -> threading.Thread:
    def publish() -> None:
        for second in range(1, count + 1):
            live.publish(run_id, "sample", {"second": second, "tps": 100.0, "latency_ms": 1.0})
            time.sleep(every_s)

    thread = threading.Thread(target=publish)
    thread.start()
    return thread


@LIVE
def test_a_stream_ends_at_its_maximum_age_and_the_reconnect_brings_every_sample_once() -> None:
    """Samples published before, during and after each forced end (and while the viewer is away,
    the 2 s before it reconnects): each arrives once. With a cap of one, each reconnect also shows
    the ended stream gave its slot back before the browser came back."""
    run = live_run()
    live.reset_run_stream(run.pk)
    vera = session_of("vera")

    with uvicorn(BENCHLAB_STREAM_MAX_AGE_S="2", BENCHLAB_MAX_STREAMS_PER_USER="1") as server:
        viewer = Viewer(server, f"/runs/{run.pk}/events", vera)
        publisher = publish_samples(run.pk, count=160, every_s=0.05)  # 8 s: at least two forced ends
        viewer.follow_until(160, timeout_s=60)
        publisher.join()

    assert viewer.renewals >= 2 and viewer.reconnects == viewer.renewals
    assert viewer.seconds == list(range(1, 161))
