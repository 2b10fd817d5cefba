"""The comparison in a real browser (Debian's chromium under Playwright, against uvicorn): runs
picked in the run list open the comparison; its charts draw (box plots and error bars from the
plugins); regrouping and panels change the page; "what differs" warns of a kernel the grouping
does not explain; the printable report prints to A4 with its charts as images.
Screenshots go to test-artifacts/."""

import re
from typing import Any

import pytest

from runs.models import Device, RunSample
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.compare.test_comparison import environment
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

CHARTS_DRAWN = "document.body.dataset.chartsReady === 'true'"


def make_study() -> list[int]:
    """Seed 002's shape: an SSD and an HDD-like disk, default mount options and barrier=0, three
    repetitions each, with per-second samples; the HDD's barrier=0 runs ran on a newer kernel."""
    host = make_host()
    pg = make_pg_install(host)
    ssd = make_device(host, name="ssd", kind=Device.Kind.SSD)
    hdd = make_device(host, name="hdd", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    ids = []
    for device, base in ((ssd, 1500.0), (hdd, 300.0)):
        for options, factor in (("", 1.0), ("barrier=0", 2.0)):
            kernel = "6.12.0-1-amd64" if device == hdd and options else "6.1.0-28-amd64"
            for repetition in range(3):
                tps = base * factor + 15 * repetition
                run = make_run(host, device, pg, mount_options=options, steady_tps_mean=tps, tps=tps,
                               latency_avg_ms=1000 * 4 / tps, latency_p95_ms=8000 / tps, latency_p99_ms=12000 / tps,
                               device_util_pct=40.0 * factor, warmup_s=3, duration_s=20,
                               os_means={"iostat": {"util_pct": 40.0 * factor, "w_await_ms": 3.0 / factor},
                                         "vmstat": {"us": 20.0, "sy": 10.0, "wa": 30.0 / factor}},
                               environment=environment(kernel=kernel))  # fmt: skip
                RunSample.objects.bulk_create(
                    RunSample(
                        run=run, second=s, tps=tps * (0.6 if s <= 3 else 1) + (s % 4) * 8, latency_ms=2.0, warmup=s <= 3
                    )
                    for s in range(1, 24)
                )
                ids.append(run.pk)
    return ids


def chart_types(page: Any) -> list[str]:
    return page.evaluate("[...document.querySelectorAll('canvas')].map((c) => Chart.getChart(c)?.config.type)")


def test_runs_picked_in_the_list_are_compared_regrouped_and_printed(web_server: str) -> None:
    ids = make_study()
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", "/runs/", height=1000) as (page, violations, errors):
        # Pick every run on the list's page and compare them.
        page.check("#select-page")
        page.click("#compare-selected")
        page.wait_for_url(re.compile(r"/compare/\?runs="))
        wait_until(page, CHARTS_DRAWN, 15_000)
        page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
        groups = page.locator("#groups tbody tr").count()
        warnings = page.locator("#differs-warnings li").all_text_contents()
        types = chart_types(page)
        table = page.locator("table[data-metric=steady_tps] tbody tr").all_text_contents()

        # Regroup: pool the mount options (group by device only), panels by nothing.
        page.check("#compare-controls input[name=group][value=device]")
        page.click("#compare-controls button[type=submit]")
        page.wait_for_load_state()
        wait_until(page, CHARTS_DRAWN, 15_000)
        pooled = page.locator("#groups tbody tr").count()
        pooled_note = page.locator("#what-differs tr", has_text="Mount options").text_content() or ""

        # Panels by device: one small chart per device.
        page.goto(f"{web_server}/compare/?runs={','.join(map(str, ids))}&facet=device")
        wait_until(page, CHARTS_DRAWN, 15_000)
        page.screenshot(path=str(ARTIFACTS / "compare-facets.png"), full_page=True)
        panels = page.locator("#compare-charts .facet canvas").count()

        # The printable report: charts as images, one A4 page.
        page.click("#print-link")
        page.wait_for_load_state()
        wait_until(page, CHARTS_DRAWN, 15_000)
        images = page.locator("#compare-charts img").count()
        canvases = page.locator("#compare-charts canvas").count()
        page.emulate_media(media="print")
        page.screenshot(path=str(ARTIFACTS / "compare-report-print.png"), full_page=True)
        pdf = page.pdf(format="A4", print_background=True)
        (ARTIFACTS / "compare-report.pdf").write_bytes(pdf)

    assert groups == 4
    assert len(warnings) == 1 and "kernel differs between groups" in warnings[0]
    assert "boxplot" in types and "barWithErrorBars" in types, types
    assert "1515.00 ± 15.00" in " ".join(table) and "slower" in " ".join(table)
    assert pooled == 2 and "varies inside group 0 (lab1:ssd), group 1 (lab1:hdd)" in " ".join(pooled_note.split())
    assert panels == 2
    assert images >= 4 and canvases == 0
    assert 1 <= len(re.findall(rb"/Type\s*/Page[^s]", pdf)) <= 4, "the report should print on a few A4 pages"
    assert not violations and not errors, violations + errors
