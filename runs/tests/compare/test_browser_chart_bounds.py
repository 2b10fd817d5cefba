"""Charts of quantities that cannot be negative (tps, latency) or above 100 (%util, CPU time)
never draw a scale or an interval past those bounds, however wide the spread: read from each
Chart.js instance of the comparison page in a real browser. Screenshot in test-artifacts/."""

from typing import Any

import pytest

from runs.models import Device
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.compare.test_browser_compare import CHARTS_DRAWN
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# Every y-like scale of every chart: its title, bounds, and each error bar's ends.
SCALES = """[...document.querySelectorAll('canvas')].map((canvas) => {
  const chart = Chart.getChart(canvas);
  if (!chart) return null;
  const scales = Object.values(chart.scales).filter((scale) => scale.axis === 'y').map((scale) => ({
    title: [].concat(scale.options.title.text || []).join(' '), min: scale.min, max: scale.max,
    ticks: scale.ticks.map((tick) => tick.value),
  }));
  const whiskers = chart.data.datasets.flatMap((dataset) => (dataset.data || [])
    .filter((point) => point && point.yMin !== undefined).map((point) => [point.yMin, point.yMax]));
  return { type: chart.config.type, label: canvas.getAttribute('aria-label'), scales, whiskers };
}).filter(Boolean)"""


def make_spread_runs() -> list[int]:
    """Two groups of three: one whose tps and %util spread so widely that their 95 % CIs reach
    below 0 and above 100 % (t(0.975, 2) = 4.3 times the standard error)."""
    host = make_host()
    pg = make_pg_install(host)
    ssd = make_device(host, name="ssd", kind=Device.Kind.SSD)
    hdd = make_device(host, name="hdd", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    ids = []
    for device, tps_values, utils in ((ssd, (20.0, 600.0, 1400.0), (40.0, 99.0, 100.0)),
                                      (hdd, (300.0, 310.0, 320.0), (2.0, 3.0, 9.0))):  # fmt: skip
        for tps, util in zip(tps_values, utils, strict=True):
            run = make_run(host, device, pg, steady_tps_mean=tps, tps=tps, latency_avg_ms=4000 / tps,
                           device_util_pct=util, warmup_s=0, duration_s=10,
                           os_means={"iostat": {"util_pct": util, "w_await_ms": 3.0},
                                     "vmstat": {"us": 60.0, "sy": 30.0, "wa": 9.0}})  # fmt: skip
            ids.append(run.pk)
    return ids


def test_no_chart_draws_a_scale_or_an_interval_below_0_or_a_percentage_above_100(page_server: str) -> None:
    ids = make_spread_runs()
    make_user("vera", "viewer", password=PASSWORD)
    compared = f"/compare/?runs={','.join(map(str, ids))}&group=device"
    with signed_in(page_server, "vera", compared, height=1400) as (page, _violations, _errors):
        wait_until(page, CHARTS_DRAWN, 15_000)
        page.screenshot(path=str(ARTIFACTS / "chart-bounds.png"), full_page=True)
        charts: list[dict[str, Any]] = page.evaluate(SCALES)

    scales = [(chart["label"], scale) for chart in charts for scale in chart["scales"]]
    assert len(charts) >= 6 and scales, charts
    below = [(label, scale) for label, scale in scales if scale["min"] < 0 or min(scale["ticks"]) < 0]
    percent = [(label, scale) for label, scale in scales if "%" in scale["title"]]
    above = [(label, scale) for label, scale in percent if scale["max"] > 100 or max(scale["ticks"]) > 100]
    assert not below, below
    assert percent and not above, percent
    whiskers = {chart["label"]: chart["whiskers"] for chart in charts if chart["whiskers"]}
    assert whiskers and all(low >= 0 for ends in whiskers.values() for low, _ in ends), whiskers
    util = next(ends for label, ends in whiskers.items() if "utilisation" in label)
    assert max(high for _, high in util) == 100, util  # the SSD's CI reaches past 100 %: drawn to 100
