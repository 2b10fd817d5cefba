"""The checkpoints of a run's measured window (issue 32) as markers on the run page's charts: a
dashed line where each began, named in the legend and listed under the throughput chart; drawn
from what the finished run stored, and live from the run's "checkpoint" events (each told at its
start and again at its end, and again by a worker that reattached). In a real browser; the live
events are published by the test itself."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from playwright.sync_api import Page

from runs.bench.selectors.run_page import run_chart_data
from runs.jobs import live
from runs.models import Run, RunSample, RunState, RunTransition
from runs.tests.bench.test_browser_run_page import finished_run, os_series, publish_samples, publish_state, text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.views.shares import shared_environment

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)
TIME = {"second": 12.4, "kind": "time", "duration_s": 9.05}
WAL = {"second": 18.2, "kind": "wal", "duration_s": 1.2}
TIME_COLOUR, WAL_COLOUR = (106, 61, 154), (192, 57, 43)  # run_detail.js's CHECKPOINT_KINDS


def with_checkpoints(run: Run, events: list[dict[str, Any]]) -> Run:
    checkpoints = {"timed": 1, "requested": 1, "source": "pg_stat_bgwriter", "events": events}
    run.environment = {"method": {"checkpoints": checkpoints}}
    run.save(update_fields=["environment"])
    return run


def marker_pixels(page: Page, chart: str, second: float, colour: tuple[int, int, int]) -> int:
    """How many pixels of the chart's plot area, in the column at `second`, have the colour."""
    return int(
        page.evaluate(
            f"""(() => {{ const c = window.benchlabCharts['{chart}'], a = c.chartArea, r = c.currentDevicePixelRatio;
            const x = Math.round(c.scales.x.getPixelForValue({second}) * r);
            const column = c.ctx.getImageData(x, Math.round(a.top * r), 1, Math.round((a.bottom - a.top) * r)).data;
            let found = 0;
            for (let i = 0; i < column.length; i += 4) {{
              const d = Math.abs(column[i] - {colour[0]}) + Math.abs(column[i + 1] - {colour[1]})
                + Math.abs(column[i + 2] - {colour[2]});
              if (d < 60) found += 1;
            }}
            return found; }})()"""
        )
    )


MARKERS = "window.benchlabCharts.tps.options.plugins.eventMarkers.markers"
LEGEND = "window.benchlabCharts.tps.legend.legendItems.map((item) => item.text)"


@pytest.mark.django_db
def test_the_chart_data_carries_the_stored_checkpoints_or_none() -> None:
    run = with_checkpoints(finished_run(), [TIME, WAL])
    stored_before = make_run(run.server_host, run.device, run.pg_install, state=RunState.DONE)

    assert run_chart_data(run)["checkpoints"] == [TIME, WAL]
    assert run_chart_data(stored_before)["checkpoints"] == []  # stored before issue 32, or not logged


@BROWSER
def test_a_finished_run_marks_its_checkpoints_on_every_chart_names_them_and_lists_them(web_server: str) -> None:
    run = with_checkpoints(finished_run(), [TIME, WAL])
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=2000.0 - (300.0 if 13 <= s <= 21 else 0.0), latency_ms=4.0, warmup=s <= 5)
        for s in range(1, 26)
    )
    os_series(run, 27)
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{run.pk}/", height=1000) as (page, violations, errors):
        wait_until(page, "window.benchlabCharts['vmstat-chart'] !== undefined", timeout_ms=10_000)
        markers = page.evaluate(MARKERS)
        legend = page.evaluate(LEGEND)
        drawn = {
            chart: (marker_pixels(page, chart, 12.4, TIME_COLOUR), marker_pixels(page, chart, 18.2, WAL_COLOUR))
            for chart in ("tps", "iostat-util-chart", "vmstat-chart")
        }
        not_there = marker_pixels(page, "tps", 8, TIME_COLOUR) + marker_pixels(page, "tps", 8, WAL_COLOUR)
        listed = text(page, "#checkpoint-list")
        page.locator("section:has(#tps-chart)").screenshot(path=str(ARTIFACTS / "run-page-checkpoints.png"))
        page.locator(".columns").screenshot(path=str(ARTIFACTS / "run-page-checkpoints-os-charts.png"))

    assert markers == [
        {"x": 12.4, "label": "checkpoint (time)", "color": "#6a3d9a"},
        {"x": 18.2, "label": "checkpoint (WAL)", "color": "#c0392b"},
    ]
    assert legend == ["throughput (tps)", "latency (ms)", "warm-up (shaded)", "checkpoint (time)", "checkpoint (WAL)"]
    for chart, (time_pixels, wal_pixels) in drawn.items():
        assert time_pixels > 20 and wal_pixels > 20, (chart, drawn)  # a dashed line down the plot
    assert not_there == 0
    assert listed == (
        "Checkpoints marked (PostgreSQL's log): second 12.4 (timed, took 9.1 s); "
        "second 18.2 (requested by WAL, took 1.2 s)."
    )
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_a_running_runs_checkpoint_is_marked_as_it_is_logged_and_once_however_often_told(web_server: str) -> None:
    host = make_host(name="lab1")
    make_user("otto", "operator", password=PASSWORD)
    now = datetime.now(UTC)
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING, warmup_s=0,
                   duration_s=40, started_at=now - timedelta(seconds=30))  # fmt: skip
    RunTransition.objects.create(run=run, state=RunState.MEASURING, at=now - timedelta(seconds=20))
    live.reset_run_stream(run.pk)
    publish_state(run, RunState.MEASURING, now - timedelta(seconds=20))
    publish_samples(run, range(1, 16))
    with signed_in(web_server, "otto", f"/runs/{run.pk}/", height=900) as (page, violations, errors):
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length === 15", timeout_ms=15_000)
        before = page.evaluate(MARKERS)
        list_hidden = page.evaluate("document.getElementById('checkpoint-list').hidden")

        # The server logs a timed checkpoint's start: marked at once, not complete yet.
        live.publish(run.pk, "checkpoint", {"second": 12.4, "kind": "time", "duration_s": None})
        wait_until(page, f"{MARKERS}.length === 1", timeout_ms=5_000)
        starting = text(page, "#checkpoint-list")
        # Its end, then the same two again from a worker that reattached: still one marker.
        publish_samples(run, range(16, 21))
        for _ in range(2):
            live.publish(run.pk, "checkpoint", TIME)
        live.publish(run.pk, "checkpoint", {"second": 12.4, "kind": "time", "duration_s": None})
        live.publish(run.pk, "checkpoint", TIME)
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length === 20", timeout_ms=10_000)
        wait_until(page, "document.getElementById('checkpoint-list').textContent.includes('took')", timeout_ms=5_000)
        markers = page.evaluate(MARKERS)
        legend = page.evaluate(LEGEND)
        drawn = marker_pixels(page, "tps", 12.4, TIME_COLOUR)
        ended = text(page, "#checkpoint-list")
        page.locator("section:has(#tps-chart)").screenshot(path=str(ARTIFACTS / "run-page-checkpoint-live.png"))

    assert before == [] and list_hidden
    assert starting == "Checkpoints marked (PostgreSQL's log): second 12.4 (timed, not complete yet)."
    assert markers == [{"x": 12.4, "label": "checkpoint (time)", "color": "#6a3d9a"}]
    assert legend == ["throughput (tps)", "latency (ms)", "checkpoint (time)"]
    assert drawn > 20
    assert ended == "Checkpoints marked (PostgreSQL's log): second 12.4 (timed, took 9.1 s)."
    assert not violations, violations
    assert not errors, errors


@pytest.mark.django_db
def test_the_page_gives_its_script_the_stored_checkpoints() -> None:
    run = with_checkpoints(finished_run(), [WAL])
    vera = Client()
    vera.force_login(make_user("vera", "viewer"))

    shown = vera.get(reverse("run-detail", args=[run.pk])).content.decode()

    data = json.loads(shown.split('<script id="chart-data" type="application/json">', 1)[1].split("</script>", 1)[0])
    assert data["checkpoints"] == [WAL]
    assert 'id="checkpoint-list" hidden' in shown
    # A shared page keeps them: counts and times say nothing of who or where.
    assert shared_environment(run.environment)["method"] == {"checkpoints": run.environment["method"]["checkpoints"]}
