"""The run page (issue 13): the log that follows its newest line and stays on the finished page,
raw outputs shown in the browser or saved, what a queued run waits for and where a running one
is, the charts (tooltips along x, a labelled warm-up band, a fixed x axis, units), the facts in
the header, and a cancel that asks first. Server-side rules with Django's test client; the rest
in a real browser (Debian's chromium under Playwright, against uvicorn), the run's live events
published by the test itself: no lab, no worker running the run. Screenshots go to test-artifacts/."""

import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from playwright.sync_api import Page

from runs.jobs import live
from runs.models import Host, Run, RunArtifact, RunOsSeries, RunSample, RunState, RunTransition
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)
START = datetime(2025, 4, 1, 14, 3, 20, tzinfo=UTC)


def text(page: Page, selector: str) -> str:
    return " ".join((page.text_content(selector) or "").split())


def in_another_thread(change: Callable[[], object]) -> None:
    """A database change while the browser runs (Playwright's event loop owns this thread: no
    ORM here), committed on the other thread's own connection."""

    def work() -> None:
        try:
            change()
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=30)


def stderr_lines(count: int) -> str:
    return "".join(
        f"progress: {s}.0 s, {1000 + s}.0 tps, lat 1.{s:03d} ms stddev 0.5, 0 failed\n" for s in range(count)
    )


def finished_run(**fields: Any) -> Run:
    """A run as a worker leaves it: done, timed, with its samples, OS series and raw outputs."""
    host, client_host = make_host(name="lab1"), make_host(name="client1", address="10.200.0.12")
    defaults: dict[str, Any] = {
        "client_host": client_host, "queued_by": make_user("oskar", "operator"), "scale": 10, "clients": 8,
        "threads": 2, "warmup_s": 5, "duration_s": 20, "tps": 1987.6, "steady_tps_mean": 2011.2,
        "steady_tps_stddev": 35.5, "latency_avg_ms": 3.9, "latency_stddev_ms": 1.1, "summary": {"tps": 1987.6},
        "started_at": START, "finished_at": START + timedelta(seconds=47),
    }  # fmt: skip
    run = make_run(host, make_device(host), make_pg_install(host), **(defaults | fields))
    RunArtifact.objects.create(run=run, name="pgbench-init.txt", content="dropping old tables...\ndone in 1.52 s\n")
    RunArtifact.objects.create(run=run, name="pgbench.stderr.txt", content=stderr_lines(300))
    return run


# ---- server side: the Django test client ----


@pytest.mark.django_db
def test_a_raw_output_is_shown_as_text_in_the_browser_or_saved_as_a_file(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host))
    RunArtifact.objects.create(run=run, name="pgbench.stderr.txt", content="<script>alert(1)</script>\n")
    url = reverse("run-artifact", args=[run.pk, "pgbench.stderr.txt"])
    vera = client_for("vera")

    shown, saved, bad = vera.get(url), vera.get(url, {"download": "1"}), vera.get(url, {"download": "yes"})

    assert shown.status_code == 200 and shown["Content-Type"] == "text/plain; charset=utf-8"
    assert shown["Content-Disposition"] == f'inline; filename="run-{run.pk}-pgbench.stderr.txt"'
    assert shown["X-Content-Type-Options"] == "nosniff"
    assert shown.content == b"<script>alert(1)</script>\n"
    assert saved["Content-Disposition"] == f'attachment; filename="run-{run.pk}-pgbench.stderr.txt"'
    assert saved["Content-Type"] == "text/plain; charset=utf-8" and saved["X-Content-Type-Options"] == "nosniff"
    assert bad.status_code == 400
    assert "download must be 1 (save the file) or left out (show it in the browser), not &#x27;yes&#x27;" in (
        bad.content.decode()
    )


@pytest.mark.django_db
def test_the_page_lists_each_output_with_its_size_a_view_and_a_download_link(client_for: ClientFactory) -> None:
    run = finished_run()

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    view = reverse("run-artifact", args=[run.pk, "pgbench.stderr.txt"])
    assert f'<a href="{view}" title="show it in the browser">pgbench.stderr.txt</a>' in page
    assert f'<a href="{view}?download=1" download' in page
    assert "<td>12 bytes</td>" in page  # pgbench.stdout.txt, "tps = 123.4\n"


@pytest.mark.django_db
def test_a_finished_runs_page_keeps_the_last_lines_of_its_log_collapsed(client_for: ClientFactory) -> None:
    run = finished_run()
    failed = make_run(run.server_host, run.device, run.pg_install, state=RunState.FAILED, failed_output="mkfs: busy")
    vera = client_for("vera")

    page = vera.get(reverse("run-detail", args=[run.pk])).content.decode()
    failed_page = vera.get(reverse("run-detail", args=[failed.pk])).content.decode()

    log = page.split('<details class="run-log" id="run-log">', 1)[1].split("</details>", 1)[0]
    assert "pgbench -i (loading the database)" in log and "all of it" in log and "done in 1.52 s" in log
    assert "pgbench (its progress and messages)" in log and "its last 200 lines" in log
    assert "progress: 299.0 s" in log and "progress: 100.0 s" in log and "progress: 99.0 s" not in log
    assert 'id="log"' not in page  # the live log's place is taken
    assert "what the failed step wrote is shown above" in failed_page and "mkfs: busy" in failed_page


def queued_behind_a_busy_lab2(**waiting: Any) -> tuple[Run, list[Run], Run]:
    """lab2 held by a measuring run with two runs queued for it, and a third queued after them
    (with `waiting`'s fields): the running run, the two ahead and the waiting one."""
    lab2 = make_host(name="lab2")
    device, pg = make_device(lab2), make_pg_install(lab2)
    running = make_run(lab2, device, pg, state=RunState.MEASURING)
    Host.objects.filter(pk=lab2.pk).update(claimed_by=running)
    ahead = [make_run(lab2, device, pg, state=RunState.QUEUED) for _ in range(2)]
    return running, ahead, make_run(lab2, device, pg, state=RunState.QUEUED, **waiting)


@pytest.mark.django_db
def test_a_queued_run_says_which_run_has_its_host_and_how_many_are_ahead(client_for: ClientFactory) -> None:
    running, ahead, waiting = queued_behind_a_busy_lab2()
    vera = client_for("vera")

    page = vera.get(reverse("run-detail", args=[waiting.pk])).content.decode()
    answer = vera.get(reverse("run-wait-json", args=[waiting.pk])).json()
    first = vera.get(reverse("run-wait-json", args=[ahead[0].pk])).json()

    link = f'<a href="{reverse("run-detail", args=[running.pk])}">run {running.pk}</a>'
    assert f"lab2 busy with {link}; 2 runs ahead" in page
    assert answer["waits"] == [f"lab2 busy with run {running.pk}; 2 runs ahead"]
    assert answer["hosts"] == [{"host": "lab2", "state": f"busy with run {running.pk}", "queue": "2 runs ahead",
                                "busy_with": running.pk}]  # fmt: skip
    assert first["waits"] == [f"lab2 busy with run {running.pk}; next in line"]


@pytest.mark.django_db
def test_a_running_run_says_which_second_it_measures_and_when_pgbench_ends(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING, warmup_s=5,
                   duration_s=30, started_at=START)  # fmt: skip
    RunTransition.objects.create(run=run, state=RunState.WARMING_UP, at=START + timedelta(seconds=4))
    RunTransition.objects.create(run=run, state=RunState.MEASURING, at=START + timedelta(seconds=10))
    RunSample.objects.bulk_create(RunSample(run=run, second=s, tps=900.0, latency_ms=2.0) for s in range(1, 22))

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    position = " ".join(page.split('id="run-position"', 1)[1].split("</p>", 1)[0].split())
    assert "measuring, second 16 of 30" in position
    assert '<time datetime="2025-04-01T14:03:59+00:00">2025-04-01 14:03:59 UTC</time>, in about 14 s' in position


@pytest.mark.django_db
def test_the_header_says_when_where_by_whom_and_the_workload_in_one_line(client_for: ClientFactory) -> None:
    run = finished_run()
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=2000.0, latency_ms=4.0, warmup=s <= 5) for s in range(1, 26)
    )

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()
    facts = " ".join(page.split('id="run-facts"', 1)[1].split("</dl>", 1)[0].split())
    facts = re.sub(r'<a href="/hosts/\d+/">([^<]*)</a>', r"\1", facts)  # hosts link to their pages

    assert "TPC-B like · scale 10 · 8 clients · 2 threads · 5 s warm-up + 20 s · simple protocol" in page
    assert "pgbench on client1 over TCP" in page
    assert '<dt>Client (pgbench)</dt><dd id="run-client">client1, over TCP</dd>' in facts
    assert '<dd id="run-queued-by">oskar</dd>' in facts
    assert ">2025-04-01 14:03:20 UTC</time>" in facts and ">2025-04-01 14:04:07 UTC</time>" in facts
    assert '<dt>Took</dt><dd id="run-took">47 s</dd>' in facts
    assert 'steady-state tps <small id="tps-steady-note">mean ± sd of the 20 measured seconds, warm-up excluded' in page
    assert '<td id="tps-steady">2011.2 ± 35.5</td>' in page
    assert "whole-run tps <small>pgbench's summary over all 25 s, warm-up included" in page
    assert '<td id="tps-whole">1987.6</td>' in page


@pytest.mark.django_db
def test_cancel_asks_first_naming_the_run_and_says_what_it_did(client_for: ClientFactory) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    otto = client_for("otto")
    queued = make_run(host, device, pg, state=RunState.QUEUED, queued_by=client_for.users["otto"])
    running = make_run(host, device, pg, state=RunState.MEASURING, queued_by=client_for.users["otto"])

    page = otto.get(reverse("run-detail", args=[queued.pk])).content.decode()
    cancelled = otto.post(reverse("run-cancel", args=[queued.pk]), follow=True).content.decode()
    requested = otto.post(reverse("run-cancel", args=[running.pk]), follow=True).content.decode()

    confirm = " ".join(page.split('<details class="confirm-cancel" id="cancel-confirm">', 1)[1].split())
    assert f'<summary class="danger" id="cancel-open">Cancel run {queued.pk}…</summary>' in confirm
    assert f"<strong>Cancel run {queued.pk}</strong> (lab1 · ssd0, queued, queued by otto)?" in confirm
    assert f'id="cancel" class="danger" aria-describedby="cancel-question">Yes, cancel run {queued.pk}</button>' in (
        confirm
    )
    assert page.index("Run again") < page.index('id="cancel-zone"')  # apart, after it
    assert f"Run {queued.pk} cancelled: it left the queue before anything ran." in cancelled
    assert f"Cancel of run {running.pk} requested: its worker stops it and cleans up." in requested
    assert "Cancel requested: its worker is stopping it and cleaning up." in requested
    assert Run.objects.get(pk=queued.pk).state == RunState.CANCELLED
    assert Run.objects.get(pk=running.pk).cancel_requested


@pytest.mark.django_db
def test_a_shared_run_page_names_nobody_and_has_no_log(client_for: ClientFactory) -> None:
    run = finished_run()
    vera: Client = client_for("vera")
    made = vera.post(reverse("share-new"), {"kind": "run", "target": run.pk})
    url = vera.get(made["Location"]).content.decode().split('id="new-share-url" value="', 1)[1].split('"', 1)[0]

    page = Client().get(url).content.decode()

    assert "TPC-B like · scale 10" in page and "2025-04-01 14:03:20 UTC" in page
    assert "oskar" not in page and "run-log" not in page and "pgbench.stderr.txt" not in page


# ---- in the browser ----


def publish_state(run: Run, state: RunState, at: datetime) -> None:
    live.publish(run.pk, "state", {"state": state.value, "label": state.label, "at": at.isoformat()})


def publish_samples(run: Run, seconds: range) -> None:
    for second in seconds:
        sample = {
            "second": second,
            "tps": 900.0 + 10 * (second % 5),
            "latency_ms": 2.0,
            "warmup": second <= run.warmup_s,
        }
        live.publish(run.pk, "sample", sample)


def publish_log(run: Run, lines: range) -> None:
    for number in lines:
        live.publish(run.pk, "log", {"stream": "init", "line": f"log line {number}"})


LOG_LINES = "document.getElementById('log').textContent.trimEnd().split('\\n').length"
LOG_AT_BOTTOM = (
    "(() => { const l = document.getElementById('log'); return l.scrollHeight - l.scrollTop - l.clientHeight <= 4; })()"
)


def hover_chart(page: Page, chart: str, second: float, height: float) -> dict[str, Any]:
    """Moves the mouse over a chart at `second` on x and `height` (0 bottom, 1 top) of its plot
    area, away from the lines; the tooltip Chart.js then shows."""
    spot = page.evaluate(
        f"""(() => {{ const c = window.benchlabCharts['{chart}'], a = c.chartArea;
        c.canvas.scrollIntoView({{ block: "center" }}); const r = c.canvas.getBoundingClientRect();
        return {{ x: r.left + c.scales.x.getPixelForValue({second}),
                  y: r.top + a.bottom - {height} * (a.bottom - a.top) }}; }})()"""
    )
    page.mouse.move(spot["x"], spot["y"])
    wait_until(page, f"window.benchlabCharts['{chart}'].tooltip.getActiveElements().length > 0", timeout_ms=5_000)
    return dict(
        page.evaluate(
            f"""(() => {{ const t = window.benchlabCharts['{chart}'].tooltip;
            return {{ title: t.title, body: t.body.map((b) => b.lines.join(' ')),
                      points: t.getActiveElements().length }}; }})()"""
        )
    )


@BROWSER
def test_a_live_run_shows_where_it_is_its_log_follows_unless_scrolled_up_and_stays_once_done(web_server: str) -> None:
    host = make_host(name="lab1")
    otto = make_user("otto", "operator", password=PASSWORD)
    now = datetime.now(UTC)
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING, queued_by=otto,
                   warmup_s=5, duration_s=30, scale=10, clients=8, threads=2,
                   started_at=now - timedelta(seconds=40))  # fmt: skip
    steps = [(RunState.QUEUED, 45), (RunState.PREPARING_STORAGE, 40), (RunState.INITIALIZING_DATABASE, 35),
             (RunState.WARMING_UP, 21), (RunState.MEASURING, 16)]  # fmt: skip
    RunTransition.objects.bulk_create(
        RunTransition(run=run, state=s, at=now - timedelta(seconds=ago)) for s, ago in steps
    )
    stored = [
        RunSample(run=run, second=s, tps=900.0 + 10 * (s % 5), latency_ms=2.0, warmup=s <= 5) for s in range(1, 23)
    ]
    RunSample.objects.bulk_create(stored[:21])  # as the worker stores them; the 22nd comes later
    live.reset_run_stream(run.pk)
    for state, ago in steps[:4]:
        publish_state(run, state, now - timedelta(seconds=ago))
    publish_log(run, range(1, 61))
    publish_samples(run, range(1, 6))
    publish_state(run, RunState.MEASURING, now - timedelta(seconds=16))
    publish_samples(run, range(6, 22))
    with signed_in(web_server, "otto", f"/runs/{run.pk}/", height=1100) as (page, violations, errors):
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length === 21", timeout_ms=15_000)
        # The log: its 60 lines, then each sample as pgbench's progress line, in the stream's order.
        wait_until(page, f"{LOG_LINES} === 81", timeout_ms=10_000)
        log_lines = (page.text_content("#log") or "").splitlines()
        position = text(page, "#run-position")
        x_axis = page.evaluate("[window.benchlabCharts.tps.scales.x.min, window.benchlabCharts.tps.scales.x.max]")
        followed = page.evaluate(LOG_AT_BOTTOM)
        tooltip = hover_chart(page, "tps", 12.3, 0.95)
        page.screenshot(path=str(ARTIFACTS / "run-page-live.png"), full_page=True)

        # A new second: on the chart, and as the log's newest line, in view.
        publish_samples(run, range(22, 23))
        wait_until(page, "document.getElementById('run-position-text').textContent === 'measuring, second 17 of 30'",
                   timeout_ms=10_000)  # fmt: skip
        wait_until(page, f"{LOG_LINES} === 82", timeout_ms=10_000)
        newest_line = (page.text_content("#log") or "").splitlines()[-1]
        sample_followed = page.evaluate(LOG_AT_BOTTOM)

        # Scrolled up, the log stays where the reader is while lines and seconds come in.
        page.evaluate("document.getElementById('log').scrollTop = 0")
        wait_until(page, "!document.getElementById('log-follow').hidden", timeout_ms=5_000)
        publish_log(run, range(61, 71))
        publish_samples(run, range(23, 24))
        wait_until(page, f"{LOG_LINES} === 93", timeout_ms=10_000)
        kept_place = page.evaluate("document.getElementById('log').scrollTop")
        status_up = text(page, ".log-follow")
        page.locator("#live-log").screenshot(path=str(ARTIFACTS / "run-page-log-scrolled-up.png"))
        # Back at the bottom, it follows again.
        page.evaluate("const l = document.getElementById('log'); l.scrollTop = l.scrollHeight")
        wait_until(page, "document.getElementById('log-follow').hidden", timeout_ms=5_000)
        publish_log(run, range(71, 81))
        wait_until(page, f"{LOG_LINES} === 103", timeout_ms=10_000)
        followed_again = page.evaluate(LOG_AT_BOTTOM)
        page.locator("#live-log").screenshot(path=str(ARTIFACTS / "run-page-log-following.png"))

        # The run ends: the page reloads as the finished page, which keeps the log, collapsed.
        def finish() -> None:
            stored[21].save()
            results = {"tps": 951.0, "steady_tps_mean": 955.5, "steady_tps_stddev": 12.5, "summary": {"tps": 951.0}}
            Run.objects.filter(pk=run.pk).update(state=RunState.DONE, finished_at=datetime.now(UTC), **results)
            RunArtifact.objects.create(
                run=run, name="pgbench-init.txt", content="".join(f"log line {n}\n" for n in range(1, 61))
            )
            RunArtifact.objects.create(run=run, name="pgbench.stderr.txt", content=stderr_lines(36))

        in_another_thread(finish)
        publish_state(run, RunState.DONE, datetime.now(UTC))
        page.wait_for_selector("#run-log", timeout=15_000)
        collapsed = page.evaluate("!document.getElementById('run-log').open")
        page.click("#run-log summary")
        finished_log = text(page, "#run-log")
        finished_points = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.length")
        page.screenshot(path=str(ARTIFACTS / "run-page-finished-log.png"), full_page=True)

    assert position.startswith("measuring, second 16 of 30 · pgbench ends ≈ "), position
    assert "in about 14 s; then results are collected" in position
    assert x_axis == [0, 35]
    assert followed, "the log did not follow its newest line"
    assert log_lines[59:62] == ["log line 60", "progress: 1 s, 910.0 tps, lat 2.000 ms",
                                "progress: 2 s, 920.0 tps, lat 2.000 ms"], log_lines[55:65]  # fmt: skip
    assert log_lines[-1] == "progress: 21 s, 910.0 tps, lat 2.000 ms" and len(log_lines) == 81, log_lines[-3:]
    assert newest_line == "progress: 22 s, 920.0 tps, lat 2.000 ms" and sample_followed, newest_line
    assert tooltip["title"] == ["second 12 (measured second 7 of 30)"] and tooltip["points"] == 2, tooltip
    assert tooltip["body"] == ["throughput: 920 tps", "latency: 2 ms"], tooltip
    assert kept_place == 0, "the log was pulled away from where the reader scrolled"
    assert "Not following: you scrolled up" in status_up
    assert followed_again
    assert collapsed
    assert "log line 60" in finished_log and "progress: 35.0 s" in finished_log
    assert finished_points == 22
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_a_queued_run_says_what_it_waits_for_as_that_changes_and_then_where_it_is(web_server: str) -> None:
    vera = make_user("vera", "viewer", password=PASSWORD)
    running, ahead, waiting = queued_behind_a_busy_lab2(warmup_s=5, duration_s=30, queued_by=vera)
    live.reset_run_stream(waiting.pk)
    publish_state(waiting, RunState.QUEUED, datetime.now(UTC))
    with signed_in(web_server, "vera", f"/runs/{waiting.pk}/", height=700) as (page, violations, errors):
        queued = text(page, "#run-wait")
        took_hidden_while_queued = page.is_hidden("#run-took-fact")
        busy_link = page.get_attribute("#run-wait a", "href")
        page.screenshot(path=str(ARTIFACTS / "run-page-queued.png"), full_page=True)

        in_another_thread(lambda: Run.objects.filter(pk=ahead[0].pk).update(state=RunState.CANCELLED))
        wait_until(page, "document.getElementById('run-wait-text').textContent.includes('1 run ahead')", 15_000)
        one_ahead = text(page, "#run-wait")
        link_after_refresh = page.get_attribute("#run-wait a", "href")  # the script links the runs named too

        publish_state(waiting, RunState.PREPARING_STORAGE, datetime.now(UTC))
        wait_until(page, "!document.getElementById('run-position').hidden", timeout_ms=10_000)
        started = (text(page, "#run-position"), page.is_hidden("#run-wait"), text(page, "#run-started"))
        wait_until(page, "!document.getElementById('run-took-fact').hidden", timeout_ms=5_000)
        running_for = " ".join(page.inner_text("#run-took-fact").split())
        page.screenshot(path=str(ARTIFACTS / "run-page-started.png"), full_page=True)

    assert queued == f"Waiting: lab2 busy with run {running.pk}; 2 runs ahead", queued
    assert busy_link == f"/runs/{running.pk}/"
    assert one_ahead == f"Waiting: lab2 busy with run {running.pk}; 1 run ahead", one_ahead
    assert link_after_refresh == f"/runs/{running.pk}/"
    assert started[0] == "preparing storage; then pgbench runs 5 s warm-up + 30 s" and started[1], started
    assert started[2].endswith(" UTC") and started[2] != "–", started
    assert took_hidden_while_queued, "a queued run says how long it has been running"
    assert re.fullmatch(r"Running for \d+ s", running_for), running_for
    assert not violations, violations
    assert not errors, errors


def os_series(run: Run, seconds: int) -> None:
    series = {
        ("iostat", "util_pct"): [min(99.0, 40 + s) for s in range(seconds)],
        ("iostat", "r_await_ms"): [0.4] * seconds,
        ("iostat", "w_await_ms"): [1.5 + s % 3 for s in range(seconds)],
        ("iostat", "r_per_s"): [120.0] * seconds,
        ("iostat", "w_per_s"): [2400.0 + 50 * (s % 4) for s in range(seconds)],
        ("vmstat", "us"): [30.0] * seconds,
        ("vmstat", "sy"): [12.0] * seconds,
        ("vmstat", "wa"): [8.0] * seconds,
    }
    RunOsSeries.objects.bulk_create(
        RunOsSeries(run=run, source=source, column=column, values=values) for (source, column), values in series.items()
    )


@pytest.mark.django_db
@pytest.mark.parametrize("shared", [False, True])
def test_the_header_names_every_client_host_in_order_and_their_databases(
    client_for: ClientFactory, shared: bool
) -> None:
    client2 = make_host(name="client2", address="10.200.0.13")
    run = finished_run(client_hosts=[client2], shared_database=shared)  # client1 is added after it

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()
    facts = " ".join(page.split('id="run-facts"', 1)[1].split("</dl>", 1)[0].split())
    facts = re.sub(r'<a href="/hosts/\d+/">([^<]*)</a>', r"\1", facts)  # hosts link to their pages

    databases = "one database" if shared else "own databases"
    assert f"pgbench on client2, client1 over TCP ({databases})</p>" in page
    assert f'<dt>Clients (pgbench)</dt><dd id="run-client">client2, client1, over TCP ({databases})</dd>' in facts


@BROWSER
def test_a_run_with_two_client_hosts_shows_them_in_its_header(web_server: str) -> None:
    client2 = make_host(name="client2", address="10.200.0.13")
    otto = make_user("otto", "operator", password=PASSWORD)  # operators cancel their own runs
    run = finished_run(client_hosts=[client2], state=RunState.MEASURING, finished_at=None, queued_by=otto)
    with signed_in(web_server, "otto", f"/runs/{run.pk}/", height=900) as (page, violations, _errors):
        where, client = text(page, "#run-where"), text(page, "#run-client")
        page.click("#cancel-open")
        page.screenshot(path=str(ARTIFACTS / "run-page-two-clients.png"), full_page=False)
        cancel_text = text(page, "#cancel-confirm .confirm-box")

    assert where.endswith("pgbench on client2, client1 over TCP (own databases)")
    assert client == "client2, client1, over TCP (own databases)"
    assert "cleans up lab1, client2 and client1;" in cancel_text
    assert not violations, violations


@BROWSER
def test_the_charts_tooltips_band_axes_and_outputs_of_a_finished_run(web_server: str) -> None:
    run = finished_run()
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=(1400.0 if s <= 5 else 2000.0) + 15 * (s % 3), latency_ms=4.0, warmup=s <= 5)
        for s in range(1, 26)
    )
    os_series(run, 27)
    single = make_run(run.server_host, run.device, run.pg_install, state=RunState.CANCELLED, warmup_s=0, duration_s=60)
    RunSample.objects.create(run=single, second=1, tps=512.0, latency_ms=3.1)
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{run.pk}/", height=1000) as (page, violations, errors):
        wait_until(page, "window.benchlabCharts['vmstat-chart'] !== undefined", timeout_ms=10_000)
        charts = page.evaluate(
            """Object.fromEntries(Object.entries(window.benchlabCharts).map(([id, c]) => [id, {
                x: [c.scales.x.min, c.scales.x.max],
                axes: Object.entries(c.scales).map(([a, s]) => `${a}: ${[].concat(s.options.title.text).join(' ')}`),
                legend: c.legend.legendItems.map((item) => item.text),
                band: c.options.plugins.warmupLabel.text }]))"""
        )
        tps_tip = hover_chart(page, "tps", 3, 0.9)  # in the warm-up, high above the line
        page.locator("section:has(#tps-chart)").screenshot(path=str(ARTIFACTS / "run-page-chart-tooltip.png"))
        iops_tip = hover_chart(page, "iostat-iops-chart", 10, 0.05)
        page.locator(".columns").screenshot(path=str(ARTIFACTS / "run-page-os-charts.png"))
        page.screenshot(path=str(ARTIFACTS / "run-page-finished.png"), full_page=True)

        # A raw output: shown in the browser as text, or saved.
        page.click("#raw-outputs a[title='show it in the browser']:text('pgbench.stderr.txt')")
        page.wait_for_load_state()
        shown = (page.url, page.evaluate("document.contentType"), page.text_content("body") or "")
        page.screenshot(path=str(ARTIFACTS / "run-page-output-inline.png"))
        page.go_back()
        with page.expect_download() as download:
            page.click("#raw-outputs a[aria-label='download pgbench.stderr.txt']")
        saved = download.value.suggested_filename

        page.goto(f"{web_server}/runs/{single.pk}/")
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length === 1", timeout_ms=10_000)
        one = page.evaluate(
            """(() => { const c = window.benchlabCharts.tps;
            return { tps: [c.scales.tps.min, c.scales.tps.max], latency: [c.scales.latency.min, c.scales.latency.max],
                     x: [c.scales.x.min, c.scales.x.max], radius: c.getDatasetMeta(0).data[0].options.radius }; })()"""
        )
        one_tip = hover_chart(page, "tps", 1, 0.5)
        page.locator("section:has(#tps-chart)").screenshot(path=str(ARTIFACTS / "run-page-one-sample.png"))

    tps = charts["tps"]
    assert tps["x"] == [0, 25] and tps["band"] == "warm-up 5 s: not in the statistics"
    assert tps["axes"] == ["x: seconds since pgbench started", "tps: throughput (tps)", "latency: latency (ms)"]
    assert tps["legend"] == ["throughput (tps)", "latency (ms)", "warm-up (shaded)"]
    util, iops = charts["iostat-util-chart"], charts["iostat-iops-chart"]
    assert util["x"] == [0, 27]  # iostat ran a little past pgbench
    assert util["axes"] == ["x: seconds since pgbench started", "pct: utilisation (%)", "ms: await (ms)"]
    assert iops["axes"] == ["x: seconds since pgbench started", "iops: I/O requests per second (IOPS)"]
    assert iops["legend"] == ["reads (IOPS)", "writes (IOPS)", "warm-up (shaded)"]
    assert charts["vmstat-chart"]["axes"] == ["x: seconds since pgbench started", "pct: CPU time (%)"]
    assert tps_tip["title"] == ["second 3 (warm-up)"] and tps_tip["body"] == ["throughput: 1,400 tps", "latency: 4 ms"]
    assert iops_tip["body"] == ["reads: 120 IOPS", "writes: 2,450 IOPS"], iops_tip  # second 10: the 10th sample
    assert shown[0].endswith(f"/runs/{run.pk}/outputs/pgbench.stderr.txt") and shown[1] == "text/plain"
    assert "progress: 299.0 s, 1299.0 tps" in shown[2]
    assert saved == f"run-{run.pk}-pgbench.stderr.txt"
    assert one["x"] == [0, 60] and one["tps"][0] == 0 and 512 < one["tps"][1] <= 700, one
    assert one["latency"][0] == 0 and 3.1 < one["latency"][1] <= 5 and one["radius"] == 3, one
    assert one_tip["title"] == ["second 1 (measured second 1 of 60)"], one_tip
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_a_run_that_failed_before_its_results_keeps_its_live_log(web_server: str) -> None:
    """What the worker stores for it (bench.services.results.store_log): the live log's last lines
    with its steps, and how it ended; the page shows them under the failure, collapsed."""
    lab2 = make_host(name="lab2")
    failed = make_run(
        lab2, make_device(lab2), make_pg_install(lab2), state=RunState.FAILED, started_at=START,
        finished_at=START + timedelta(seconds=4), failed_step=RunState.PREPARING_STORAGE,
        failed_command="mount -t xfs -o nobarrier /dev/loop7 /var/lib/benchlab/runs/run-9/mnt",
        failed_exit_status=32, failed_output="xfs: Unknown parameter 'nobarrier'", error="mount failed",
    )  # fmt: skip
    log = "== preparing storage ==\n$ mkfs.xfs -f /dev/loop7\n== failed: mount failed ==\n"
    RunArtifact.objects.create(run=failed, name="log.txt", content=log)
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{failed.pk}/", height=900) as (page, violations, errors):
        collapsed = page.evaluate("!document.getElementById('run-log').open")
        page.click("#run-log summary")
        shown = text(page, "#run-log")
        page.screenshot(path=str(ARTIFACTS / "run-page-failed-log.png"), full_page=True)

    assert collapsed
    assert "the live log, as the run ended" in shown and "all of it" in shown
    assert "$ mkfs.xfs -f /dev/loop7" in shown and "== failed: mount failed ==" in shown
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_cancel_sits_apart_looks_destructive_and_asks_naming_the_run(web_server: str) -> None:
    host = make_host(name="lab1")
    otto = make_user("otto", "operator", password=PASSWORD)
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED, queued_by=otto)
    live.reset_run_stream(run.pk)
    with signed_in(web_server, "otto", f"/runs/{run.pk}/", height=700) as (page, violations, errors):
        again, cancel = page.locator(".actions a.button").bounding_box(), page.locator("#cancel-open").bounding_box()
        colour = page.evaluate("getComputedStyle(document.getElementById('cancel-open')).color")
        hidden_before = page.is_hidden("#cancel")
        page.click("#cancel-open")
        question = text(page, "#cancel-question")
        page.screenshot(path=str(ARTIFACTS / "run-page-cancel-confirm.png"))
        page.click("#cancel")
        page.wait_for_load_state()
        wait_until(page, "document.getElementById('run-state').textContent === 'cancelled'", timeout_ms=10_000)
        message = text(page, ".messages")
        page.screenshot(path=str(ARTIFACTS / "run-page-cancelled.png"), full_page=True)

    assert again is not None and cancel is not None and cancel["x"] - (again["x"] + again["width"]) > 300
    assert colour == "rgb(180, 35, 24)"  # --bad
    assert hidden_before, "the final button shows before the confirmation is opened"
    assert question == f"Cancel run {run.pk} (lab1 · ssd0, queued, queued by otto)?"
    assert message == f"Run {run.pk} cancelled: it left the queue before anything ran."
    assert not violations, violations
    assert not errors, errors


# A lone point's own pixels, just right of its centre (where a plot edge clipped it): three rows,
# so no 1-pixel axis tick can pass for it.
DOT_RIGHT_HALF = """(() => { const c = window.benchlabCharts.tps, p = c.getDatasetMeta(0).data[0];
    const r = window.devicePixelRatio || 1, ctx = c.canvas.getContext('2d');
    const alphas = [-1, 0, 1].map((dy) =>
        ctx.getImageData(Math.round((p.x + 2) * r), Math.round((p.y + dy) * r), 1, 1).data[3]);
    return { x: p.x, right: c.chartArea.right, max: c.scales.x.max, alphas }; })()"""


@BROWSER
def test_a_cancelled_run_and_a_one_second_run_read_whole(web_server: str) -> None:
    """Items 1 and 2 of the walk-through (issue 13): run 7, cancelled 8 measured seconds in, and
    run 9, one second without a warm-up, whose only point sat half clipped on the chart's edge."""
    from runs.tests.web.test_walkthrough_fixes import cancelled_while_measuring

    cancelled = cancelled_while_measuring()
    host = cancelled.server_host
    one = make_run(host, cancelled.device, cancelled.pg_install, warmup_s=0, duration_s=1, tps=1617.4,
                   steady_tps_mean=1611.9, latency_avg_ms=1.228, latency_stddev_ms=0.597, failed_transactions=0,
                   summary={"tps": 1617.4}, started_at=START, finished_at=START + timedelta(seconds=9))  # fmt: skip
    RunSample.objects.create(run=one, second=1, tps=1611.9, latency_ms=1.2)
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{cancelled.pk}/", height=1000) as (page, violations, errors):
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length === 13", timeout_ms=10_000)
        cancel_note = text(page, "#cancelled")
        results = page.inner_text("section.results table.numbers >> nth=0")
        page.screenshot(path=str(ARTIFACTS / "run-page-cancelled-while-measuring.png"), full_page=True)

        page.goto(f"{web_server}/runs/{one.pk}/")
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length === 1", timeout_ms=10_000)
        dot = page.evaluate(DOT_RIGHT_HALF)
        count, steady = text(page, "#sample-count"), text(page, "#tps-steady")
        page.locator("section:has(#tps-chart)").screenshot(path=str(ARTIFACTS / "run-page-one-second-chart.png"))
        page.locator("section.results table.numbers >> nth=0").screenshot(
            path=str(ARTIFACTS / "run-page-one-second.png")
        )

    assert "otto cancelled it at 2026-11-24 06:46:52 UTC; pgbench was stopped after measuring 8 of the 60" in (
        cancel_note
    ), cancel_note
    assert "mean ± sd of the 8 measured seconds (of 60 planned), warm-up excluded\n\t1925.6 ± 498.3" in results, results
    assert results.count("not reported (pgbench was stopped)") == 4 and "ms ± ms" not in results, results
    # The only point sits on the last second, the plot's right edge, drawn whole.
    assert dot["max"] == 1 and abs(dot["x"] - dot["right"]) < 1 and min(dot["alphas"]) > 0, dot
    assert count == "1 of 1 second" and steady == "1611.9 (one second: no sd)", (count, steady)
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_a_run_done_after_its_worker_died_in_the_cleanup_says_so_with_its_results(web_server: str) -> None:
    note = (
        "the worker running it stopped while cleaning up (no sign of life since 14:04:07 UTC), after its results"
        " were stored; cleaned up on lab1: stopped the run user's processes (pgbench, PostgreSQL); unmounted"
    )
    run = finished_run(state=RunState.DONE, error=note, results_stored_at=START + timedelta(seconds=40))
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{run.pk}/", height=900) as (page, violations, _errors):
        page.locator("#run-note").screenshot(path=str(ARTIFACTS / "run-page-done-with-note.png"))
        shown, failure = text(page, "#run-note"), page.locator("section.failure").count()

    assert shown == f"Done, with a note {note}"
    assert failure == 0
    assert not violations, violations
