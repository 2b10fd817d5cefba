"""The comparison's charts in a real browser, without a database or a worker: the real partial
(templates/runs/_compare_charts.html, with its vendored Chart.js and plugins) rendered into a bare
page, served with the site's Content-Security-Policy by a local HTTP server together with the
static files and a hand-written comparison (fixtures/comparison_data.json: 4 groups of 3
repetitions on two devices, faceted by device). Screenshots go to test-artifacts/."""

import copy
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from csp.utils import build_policy
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.templatetags.static import static
from playwright.sync_api import Page

from runs.tests.browser import ARTIFACTS, chromium, wait_until
from runs.tests.captured import captured

FIXTURE = json.loads(captured("comparison_data.json"))
TYPES = {"json": "application/json", "js": "text/javascript", "css": "text/css", "html": "text/html; charset=utf-8"}


def page_html(data_url: str, print_mode: bool) -> bytes:
    charts = render_to_string("runs/_compare_charts.html", {"data_url": data_url, "print": print_mode, "shared": False})
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>charts</title>'
        '<link rel="icon" href="data:,">'  # no favicon request, whose 404 would read as an error
        f'<link rel="stylesheet" href="{static("css/benchlab.css")}">'
        f'<link rel="stylesheet" href="{static("css/print.css")}">'
        f"</head><body><main>{charts}</main></body></html>"
    ).encode()


@dataclass
class Site:
    """Pages and JSON by path; anything under the static URL comes from the static files."""

    url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site()
    static_prefix = static("")
    policy = build_policy()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            body = served.files.get(path)
            if body is None and path.startswith(static_prefix):
                found = finders.find(path.removeprefix(static_prefix))
                body = Path(found).read_bytes() if isinstance(found, str) else None
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", TYPES.get(path.rsplit(".", 1)[-1], "application/octet-stream"))
            self.send_header("Content-Security-Policy", policy)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a test's output is its assertions

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def serve(site: Site, data: dict[str, Any] | None, print_mode: bool = False) -> str:
    """The page's URL; its data endpoint answers `data`, or 404 when None."""
    name = "print" if print_mode else "page"
    if data is not None:
        site.files[f"/{name}.json"] = json.dumps(data).encode()
    site.files[f"/{name}.html"] = page_html(f"/{name}.json", print_mode)
    return f"{site.url}/{name}.html"


DRAWN_OR_FAILED = "document.body.dataset.chartsReady === 'true' || !!document.querySelector('#charts-status.error')"


def open_charts(page: Page, url: str) -> list[str]:
    """Loads the page and waits until every chart is drawn (or the page says why not); returns the
    script errors and console errors, which go on being collected while the page lives."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(url)
    try:
        wait_until(page, DRAWN_OR_FAILED, 20_000)
    except AssertionError as timeout:
        raise AssertionError(f"{timeout}; the page said: {errors}") from None
    return errors


# Per canvas: its chart's type and whether anything was painted on it (some pixel not transparent).
CHARTS_JS = """() => [...document.querySelectorAll('#compare-charts canvas')].map((canvas) => {
  const chart = Chart.getChart(canvas);
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0;
  for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) painted++;
  const datasets = chart ? chart.data.datasets.map((d) => ({data: d.data, borderWidth: d.borderWidth})) : [];
  return {id: canvas.id, type: chart ? chart.config.type : null, painted, datasets};
})"""


FIRST_CHART = "Chart.getChart(document.querySelector('#metric-charts canvas'))"


def point_of(page: Page, dataset: int, index: int) -> tuple[float, float]:
    """Where on the page the first chart draws a dataset's element (a bar's top, a dot)."""
    x, y = page.evaluate(
        f"""() => {{
          const chart = {FIRST_CHART};
          const element = chart.getDatasetMeta({dataset}).data[{index}];
          const box = chart.canvas.getBoundingClientRect();
          return [box.left + element.x, box.top + element.y + 2];
        }}"""
    )
    return x, y


def hover_second_bar(page: Page) -> None:
    """The pointer on the first chart's second bar, until its tooltip shows that bar. Charts
    further down may still be laying out and move this one a little after its place was read:
    then the pointer is placed again."""
    first = f"{FIRST_CHART}.tooltip.dataPoints?.[0]"
    showing = f"{first}?.datasetIndex === 0 && {first}?.dataIndex === 1"
    for _ in range(5):
        page.mouse.move(*point_of(page, dataset=0, index=1))
        page.wait_for_timeout(300)  # Chart.js handles pointer events on the next animation frame
        if page.evaluate(showing):
            return
        page.mouse.move(0, 0)  # away, so the next move is a new hover
    wait_until(page, showing, 5_000)


def test_every_chart_of_a_faceted_comparison_is_drawn_with_the_plugins(site: Site) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    url = serve(site, FIXTURE)
    with chromium(height=1000) as (context, violations):
        page = context.new_page()
        problems = open_charts(page, url)
        charts = page.evaluate(CHARTS_JS)
        # Pointer first, before any screenshot: a full-page one resizes the window, and Chart.js
        # replays the last pointer event at its old place on the resized chart.
        page.locator(".metric-charts").first.scroll_into_view_if_needed()
        hover_second_bar(page)
        tooltip = page.evaluate(f"{FIRST_CHART}.tooltip.body.map((item) => item.lines.join(' '))")
        footer = page.evaluate(f"{FIRST_CHART}.tooltip.footer")
        page.wait_for_timeout(500)  # the tooltip fades in
        page.locator(".metric-charts").first.screenshot(path=ARTIFACTS / "compare-charts-tooltip.png")
        errors = list(problems)  # the run page is not served here: its 404 is no error of the charts
        page.mouse.click(*point_of(page, dataset=2, index=1))  # its second run's dot
        page.wait_for_url("**/runs/*/")
        clicked = page.url

        page = context.new_page()
        errors += open_charts(page, url)
        page.screenshot(path=ARTIFACTS / "compare-charts.png", full_page=True)
        # Close-ups, to look at: the first metric's pair, the facet panels, the per-second series.
        page.locator(".metric-charts").first.screenshot(path=ARTIFACTS / "compare-charts-metric.png")
        for section in ("facet", "series", "os"):
            page.locator(f"#{section}-section").screenshot(path=ARTIFACTS / f"compare-charts-{section}.png")

    assert errors == [] and violations == []
    assert [chart["id"] for chart in charts if chart["type"] is None or chart["painted"] < 1000] == []
    metrics = len(FIXTURE["metrics"])
    types = [chart["type"] for chart in charts]
    # Per metric a bar chart with error bars and a box plot, then a panel per facet value (2).
    assert types.count("barWithErrorBars") == metrics + len(FIXTURE["facets"])
    assert types.count("boxplot") == metrics
    assert {chart["id"]: chart["type"] for chart in charts if chart["id"]} == {
        "series-tps-chart": "line",
        "series-latency-chart": "line",
        "percentiles-chart": "bar",
        "iostat-chart": "bar",
        "vmstat-chart": "bar",
    }
    steady = FIXTURE["metrics"][0]
    means = charts[0]["datasets"][0]
    assert [bar["y"] for bar in means["data"]] == [row["summary"]["mean"] for row in steady["rows"]]
    assert [bar["yMax"] for bar in means["data"]] == [row["summary"]["ci_high"] for row in steady["rows"]]
    assert means["borderWidth"] == [3, 1, 1, 1]  # the baseline, group 0, outlined
    dots = [
        (point["run"], point["y"])
        for dataset in charts[0]["datasets"][1:]
        for point in dataset["data"]
        if "run" in point
    ]
    assert sorted(dots) == sorted((value["run"], value["value"]) for row in steady["rows"] for value in row["values"])
    second = steady["rows"][1]
    assert tooltip[0].startswith("mean 5,4") and "95 % CI" in tooltip[0]
    assert tooltip[1:] == [f"run {value['run']}: {value['value']:,.0f} tps" for value in second["values"]]
    assert footer == ["n = 3 finished", f"vs baseline: {second['comparison']['text']}"]
    assert clicked.endswith(f"/runs/{second['values'][1]['run']}/")
    facet_panels = [chart for chart in charts if chart["type"] == "barWithErrorBars"][metrics:]
    assert [len(panel["datasets"][0]["data"]) for panel in facet_panels] == [2, 2]


def test_print_mode_turns_every_chart_into_an_image(site: Site) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium(height=1000) as (context, violations):
        page = context.new_page()
        problems = open_charts(page, serve(site, FIXTURE, print_mode=True))
        canvases = page.locator("#compare-charts canvas").count()
        sizes = page.evaluate(
            "[...document.querySelectorAll('#compare-charts img.chart-image')].map((i) => i.naturalWidth)"
        )
        page.emulate_media(media="print")
        page.screenshot(path=ARTIFACTS / "compare-charts-print.png", full_page=True)
        page.locator(".metric-charts").first.screenshot(path=ARTIFACTS / "compare-charts-print-metric.png")
        page.pdf(path=ARTIFACTS / "compare-charts-print.pdf", format="A4")

    assert problems == [] and violations == []
    assert canvases == 0
    charts = 2 + len(FIXTURE["facets"]) + 5  # the report charts the headline metric only: the tables hold the rest
    assert len(sizes) == charts and min(sizes) > 300  # drawn at twice the CSS size, for paper


def test_a_comparison_without_facets_latency_log_or_os_figures_draws_what_it_has(site: Site) -> None:
    data = copy.deepcopy(FIXTURE)
    data["facets"] = []
    for group in data["groups"]:
        group["facet"] = None
    for row in data["latency_percentiles"]:
        row.update(p50=None, p90=None, p95=None, p99=None, p999=None)
    data["os"] = []
    data["metrics"] = data["metrics"][:1]
    data["metrics"][0]["rows"][3].update(summary={"n": 1, "mean": 900.0, "sd": None, "minimum": 900.0, "median": 900.0,
                                                  "maximum": 900.0, "cv": None, "ci_low": None, "ci_high": None},
                                         values=[{"run": 111, "value": 900.0}])  # fmt: skip
    with chromium(height=1000) as (context, violations):
        page = context.new_page()
        problems = open_charts(page, serve(site, data))
        types = page.evaluate(f"({CHARTS_JS})().map((chart) => chart.type)")
        texts = page.locator("#compare-charts p.muted").all_text_contents()
        facets_hidden = page.locator("#facet-section").is_hidden()

    assert problems == [] and violations == []
    assert sorted(types) == ["barWithErrorBars", "boxplot", "line", "line"]
    assert "No per-transaction latency log in these runs, so no percentiles." in texts
    assert "No iostat measurements in these runs." in texts and "No vmstat measurements in these runs." in texts
    assert facets_hidden


def test_a_failing_data_request_is_said_on_the_page(site: Site) -> None:
    with chromium(height=600) as (context, _):
        page = context.new_page()
        open_charts(page, serve(site, None))
        status = page.text_content("#charts-status")
        ready = page.evaluate("document.body.dataset.chartsReady || ''")

    assert status == "The charts could not be drawn: the data request answered 404"
    assert ready == ""
