"""Redis restarted while a run measures: live publishing is best-effort, so the run goes on and
its samples reach PostgreSQL; once Redis is back, events flow again. Against a Redis server of
the test's own (started and stopped by PID), never the machine's."""

import subprocess
import time
from collections.abc import Iterator
from contextlib import closing

import pytest
import redis
from django.conf import LazySettings, settings
from django.utils import timezone

from runs.bench.services.observer import RunObserver
from runs.jobs import live
from runs.lab.parse.pgbench import ProgressSample
from runs.models import RunSample, RunState
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in, serving, wait_until
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.web_server import free_port

pytestmark = pytest.mark.django_db


class PrivateRedis:
    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with closing(redis.Redis(port=self.port)) as probe:
                    probe.ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def private_redis(settings: LazySettings) -> Iterator[PrivateRedis]:
    server = PrivateRedis(free_port())
    server.start()
    settings.REDIS_URL = f"redis://127.0.0.1:{server.port}/0"
    try:
        yield server
    finally:
        server.stop()


def sample(second: int) -> ProgressSample:
    return ProgressSample(elapsed_s=float(second), tps=100.0 + second, latency_ms=1.0, latency_stddev_ms=0.1)


def test_a_redis_restart_mid_run_loses_no_sample_and_live_events_resume(private_redis: PrivateRedis) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING, duration_s=6)
    observer = RunObserver(run)

    observer.progress(sample(1))
    observer.progress(sample(2))
    private_redis.stop()
    observer.progress(sample(3))  # Redis away: no exception, the sample is stored
    observer.line("pgbench", "a log line while Redis is away")
    private_redis.start()  # empty: it keeps nothing on disk, like the machine's
    observer.progress(sample(4))

    stored = list(RunSample.objects.filter(run=run).order_by("second").values_list("second", flat=True))
    assert stored == [1, 2, 3, 4]
    events = live.events_after(live.run_stream(run.pk))
    assert [e.data["second"] for e in events if e.kind == "sample"] == [4]  # published again once it is back
    assert live.publish(run.pk, "log", {"line": "x"}) != ""
    private_redis.stop()
    assert live.publish(run.pk, "log", {"line": "x"}) == ""  # said, not raised


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_live_page_reconnects_after_a_redis_restart_and_fills_the_gap_from_postgresql(
    private_redis: PrivateRedis,
) -> None:
    """In a real browser, against uvicorn on the test's own Redis: the samples that could not be
    published while Redis was away reach the page from PostgreSQL (each reconnect of its event
    stream asks for them), and live events flow again once Redis is back."""
    make_user("vera", "viewer", password=PASSWORD)
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING, duration_s=6,
                   warmup_s=0, started_at=timezone.now())  # fmt: skip
    observer = RunObserver(run)
    ARTIFACTS.mkdir(exist_ok=True)
    with serving("test-unused", REDIS_URL=settings.REDIS_URL) as web, chromium(height=900) as (context, violations):
        page = context.new_page()
        log_in(page, web, "vera")
        page.goto(f"{web}/runs/{run.pk}/")
        observer.progress(sample(1))
        observer.progress(sample(2))
        wait_until(page, "document.getElementById('sample-count').textContent.startsWith('2 of 6 seconds')", 15_000)
        private_redis.stop()  # the page's stream breaks; it reconnects every 2 s
        observer.progress(sample(3))  # stored, not published: Redis is away
        observer.progress(sample(4))
        wait_until(page, "document.getElementById('sample-count').textContent.startsWith('4 of 6 seconds')", 20_000)
        page.screenshot(path=str(ARTIFACTS / "run-live-while-redis-is-away.png"), full_page=True)
        private_redis.start()  # empty: it keeps nothing on disk
        observer.progress(sample(5))  # and live again
        wait_until(page, "document.getElementById('sample-count').textContent.startsWith('5 of 6 seconds')", 15_000)
        page.screenshot(path=str(ARTIFACTS / "run-live-after-redis-restart.png"), full_page=True)
        drawn = page.evaluate("Chart.getChart('tps-chart').data.datasets[0].data.map(point => point.x)")

    assert drawn == [1, 2, 3, 4, 5]
    assert not violations, violations
