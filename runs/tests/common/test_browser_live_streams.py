"""Live pages in a real browser (Debian's chromium under Playwright, against uvicorn) when the
server bounds their streams (runs/views/live.py): a run page keeps receiving every sample and log
line, once, across the streams' forced ends, and a page past the person's cap says why it does
not follow and what to do. Events are published by the test itself: no lab, no worker."""

import threading
import time
from datetime import UTC, datetime

from playwright.sync_api import Page, Request

from runs.jobs import live
from runs.models import Run, RunSample, RunState
from runs.tests.bench.test_browser_run_page import BROWSER, text
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in, serving, wait_until, watch_errors
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

SECONDS = 40
LOG_LINES = "document.getElementById('log').textContent.trimEnd().split('\\n')"


def measuring_run() -> Run:
    host = make_host(name="lab1")
    otto = make_user("otto", "operator", password=PASSWORD)
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING, queued_by=otto,
                   warmup_s=0, duration_s=SECONDS, started_at=datetime.now(UTC))  # fmt: skip
    live.reset_run_stream(run.pk)
    return run


def publish_while(run_id: int, every_s: float) -> threading.Thread:
    """A sample and a log line at a time, as a measuring worker sends them (no ORM: not stored)."""

    def publish() -> None:
        for second in range(1, SECONDS + 1):
            live.publish(run_id, "log", {"stream": "pgbench", "line": f"line {second}"})
            live.publish(run_id, "sample", {"second": second, "tps": 900.0 + second, "latency_ms": 2.0})
            time.sleep(every_s)

    thread = threading.Thread(target=publish)
    thread.start()
    return thread


def requests_to(page: Page, ending: str) -> list[str]:
    seen: list[str] = []

    def keep(request: Request) -> None:
        if request.url.split("?")[0].endswith(ending):
            seen.append(request.url)

    page.on("request", keep)
    return seen


@BROWSER
def test_a_run_page_keeps_every_sample_and_log_line_once_across_its_streams_forced_ends() -> None:
    """The streams end after 3 s: the page reconnects by itself, resumes after the last event it
    saw, and takes the planned end for no break (it does not ask PostgreSQL for the seconds, which
    hold none here: every point on the chart came through the stream)."""
    run = measuring_run()
    assert not RunSample.objects.filter(run=run).exists()
    errors: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    with serving("test-unused", BENCHLAB_STREAM_MAX_AGE_S="3") as web, chromium(height=1100) as (context, violations):
        page = context.new_page()
        watch_errors(page, errors)
        log_in(page, web, "otto")
        streams, gap_fills = requests_to(page, "/events"), requests_to(page, "samples.json")
        page.goto(f"{web}/runs/{run.pk}/")
        publisher = publish_while(run.pk, every_s=0.25)  # 10 s: a stream lives 3 s, and 2 s pass before each reconnect
        wait_until(page, f"document.getElementById('sample-count').textContent.startsWith('{SECONDS} of')", 30_000)
        publisher.join()
        drawn = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.map((point) => point.x)")
        log = page.evaluate(LOG_LINES)
        page.screenshot(path=str(ARTIFACTS / "run-page-across-forced-stream-ends.png"), full_page=True)
        stopped = page.locator("#live-stopped").count()

    assert len(streams) >= 3, streams  # the first and a reconnect after each of two forced ends at least
    assert gap_fills == [], "a planned end was taken for a break"
    assert drawn == list(range(1, SECONDS + 1))
    expected = [
        line for s in range(1, SECONDS + 1) for line in (f"line {s}", f"progress: {s} s, {900 + s}.0 tps, lat 2.000 ms")
    ]
    assert log == expected, [line for line in log if log.count(line) > 1] or log
    assert stopped == 0
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_a_page_past_the_persons_cap_says_why_it_does_not_follow_and_follows_once_one_is_closed() -> None:
    run = measuring_run()
    ARTIFACTS.mkdir(exist_ok=True)
    with (
        serving("test-unused", BENCHLAB_MAX_STREAMS_PER_USER="1") as web,
        chromium(height=900) as (context, violations),
    ):
        first = context.new_page()
        log_in(first, web, "otto")
        first.goto(f"{web}/runs/{run.pk}/")
        live.publish(run.pk, "sample", {"second": 1, "tps": 901.0, "latency_ms": 2.0})
        wait_until(first, "document.getElementById('sample-count').textContent.startsWith('1 of')", 10_000)
        second = context.new_page()  # the run list, in another tab: one stream too many
        second.goto(f"{web}/runs/")
        second.wait_for_selector("#live-stopped", timeout=10_000)
        refused = text(second, "#live-stopped")
        second.screenshot(path=str(ARTIFACTS / "run-list-past-the-stream-cap.png"), full_page=True)

        first.close()  # its stream's slot is given back
        time.sleep(1)
        second.reload()
        second.wait_for_load_state()
        time.sleep(2)  # the stream opened, or was refused again
        stopped_after_reload = second.locator("#live-stopped").count()

    assert refused.startswith("Live updates stopped. You already have 1 live view open, the most one person"), refused
    assert refused.endswith("Close a page you no longer watch, then reload this one."), refused
    assert stopped_after_reload == 0
    assert not violations, violations
