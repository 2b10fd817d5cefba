"""The device page and a fio baseline's page in a real browser (Debian's chromium under
Playwright, against uvicorn): the device's fio history chart and its claims beside the
measured figures; a baseline page that follows fio live (which test, by the clock; progress;
log lines) and turns into the results page. Events are published by the test itself: no lab,
no worker runs fio. Screenshots go to test-artifacts/."""

import copy
from datetime import timedelta
from typing import Any

from django.utils import timezone

from runs.baselines.services.execute import result_fields
from runs.jobs import live
from runs.jobs.kinds import BASELINE
from runs.lab.fio.plan import MiB
from runs.models import BaselineState, Device, DeviceBaseline
from runs.tests.baselines.test_baselines import SHORT, fio_result
from runs.tests.bench.test_browser_run_page import in_another_thread, text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.builds.test_browser_builds import BROWSER
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

CELL_TEXTS = "cells => cells.map(c => c.textContent.trim())"
JOBS = ["seq-write", "seq-read", "rand-read-qd1", "rand-read-qd32", "rand-write-qd1", "rand-write-qd32"]


def scaled(results: dict[str, Any], factor: float) -> dict[str, Any]:
    """The fixture's figures, all bandwidths and IOPS times `factor` (a drifting device)."""
    changed = copy.deepcopy(results)
    for job in changed.values():
        for direction in ("read", "write"):
            if job[direction]:
                job[direction]["bw_mb_s"] *= factor
                job[direction]["iops"] *= factor
    return changed


def done_baseline(device: Device, days_ago: int, factor: float) -> DeviceBaseline:
    fields = result_fields(fio_result(SHORT))
    fields["results"] = scaled(fields["results"], factor)
    at = timezone.now() - timedelta(days=days_ago)
    baseline = DeviceBaseline.objects.create(device=device, host=device.host, size_bytes=64 * MiB, runtime_s=2,
                                             ramp_s=0, jobs=JOBS, state=BaselineState.DONE, started_at=at,
                                             finished_at=at + timedelta(minutes=1), **fields)  # fmt: skip
    return baseline


@BROWSER
def test_the_device_page_charts_its_fio_history_and_sets_claims_beside_measurements(web_server: str) -> None:
    host = make_host(name="lab1")
    device = make_device(host, name="ssd0", wipe_allowed=True, capacity_bytes=2**31, model="Patriot PI100GS25SSDR",
                         claimed_seq_read_mb_s=285.0, claimed_seq_write_mb_s=275.0, claimed_rand_read_iops=50_000.0,
                         claimed_latency_ms=0.1)  # fmt: skip
    baselines = [done_baseline(device, days, factor) for days, factor in ((20, 1.0), (10, 0.9), (1, 0.8))]
    install = make_pg_install(host)
    runs = [make_run(host, device, install, steady_tps_mean=tps) for tps in (2595.2, 2601.0)]
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(web_server, "otto", f"/devices/{device.pk}/", height=1500) as (page, violations, errors):
        wait_until(page, "!!(window.Chart && Chart.getChart('iops-chart') && Chart.getChart('latency-chart'))", 10_000)
        points = page.evaluate("Chart.getChart('bandwidth-chart').data.datasets.map(d => d.data.length)")
        iops_scale = page.evaluate("Chart.getChart('iops-chart').options.scales.y.type")
        claims = page.eval_on_selector_all(
            "#claims-vs-measured tbody tr", "rows => rows.map(r => r.querySelector('th').textContent.trim())"
        )
        percents = page.eval_on_selector_all(
            "#claims-vs-measured .claim-pct", "cells => cells.map(c => c.textContent.trim())"
        )
        history = page.eval_on_selector_all("#baseline-history tbody tr", "rows => rows.map(r => r.id)")
        measure = text(page, "#measure")
        page.screenshot(path=str(ARTIFACTS / "device-page.png"), full_page=True)
        # The comparison of its runs shows the device's latest fio baseline beside the pgbench figures.
        page.goto(f"{web_server}/compare/?runs={runs[0].pk},{runs[1].pk}")
        page.wait_for_selector("#compare-baselines")
        compared = page.eval_on_selector_all(f"#compare-baseline-device-{device.pk} td", CELL_TEXTS)
        page.locator("#compare-baselines").screenshot(path=str(ARTIFACTS / "compare-baselines.png"))
    latest = baselines[-1]
    seq_read = latest.figure("seq_read_mb_s")
    assert points == [3, 3] and iops_scale == "logarithmic"
    assert claims[0] == "sequential read" and len(claims) == 5
    assert seq_read is not None and percents[0] == f"{round(100 * seq_read / 285.0)} %"
    assert percents[3] == "–"  # the random write IOPS: not claimed
    assert history == [f"history-{b.pk}" for b in reversed(baselines)]  # newest first
    assert measure == "Measure this device with fio"
    assert compared[-2] == "raw device" and compared[-1].startswith(f"baseline {latest.pk}, "), compared
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_the_baseline_page_follows_fio_live_and_turns_into_the_results(web_server: str) -> None:
    host = make_host(name="lab1")
    device = make_device(host, name="hdd", kind=Device.Kind.HDD, wipe_allowed=True, claimed_seq_read_mb_s=135.0)
    otto = make_user("otto", "operator", password=PASSWORD)
    started = timezone.now()
    baseline = DeviceBaseline.objects.create(device=device, host=host, size_bytes=64 * MiB, runtime_s=10, ramp_s=0,
                                             jobs=JOBS, state=BaselineState.RUNNING, started_at=started,
                                             heartbeat_at=started, queued_by=otto)  # fmt: skip
    pk = baseline.pk
    live.publish_job(BASELINE, pk, "state", {"state": "queued", "label": "queued", "at": started.isoformat()})
    live.publish_job(BASELINE, pk, "state", {"state": "running", "label": "running", "at": started.isoformat()})
    live.publish_job(BASELINE, pk, "log", {"line": "fio started (PID 4242): 6 jobs"})
    for index, job in enumerate(JOBS[:3]):
        live.publish_job(
            BASELINE, pk, "step", {"step": job, "label": job, "index": index + 1, "of": 6, "at": started.isoformat()}
        )
    live.publish_job(BASELINE, pk, "progress", {"percent": 41.7, "eta_s": 35, "step": "rand-read-qd1"})

    def finish() -> None:
        fields = result_fields(fio_result(SHORT))
        DeviceBaseline.objects.filter(pk=pk).update(state=BaselineState.DONE, finished_at=timezone.now(),
                                                    progress=100.0, **fields)  # fmt: skip
        live.publish_job(BASELINE, pk, "state", {"state": "done", "label": "done", "at": timezone.now().isoformat()})

    with signed_in(web_server, "otto", f"/baselines/{pk}/", height=1400) as (page, violations, errors):
        wait_until(page, "document.getElementById('baseline-progress-text').textContent.includes('42 %')", 10_000)
        steps = page.eval_on_selector_all("#baseline-steps .build-step", "items => items.map(i => i.className)")
        label = text(page, "#baseline-progress-label")
        progress = text(page, "#baseline-progress-text")
        log = text(page, "#log")
        page.screenshot(path=str(ARTIFACTS / "baseline-live.png"), full_page=True)
        in_another_thread(finish)
        wait_until(page, "!!document.getElementById('figures')", 15_000)
        state = text(page, "#baseline-state")
        json_link = page.get_attribute("#download-json", "href")
        claims = page.eval_on_selector_all(
            "#claims-vs-measured .claim-pct", "cells => cells.map(c => c.textContent.trim())"
        )
        page.screenshot(path=str(ARTIFACTS / "baseline-done.png"), full_page=True)
    assert (
        steps
        == ["build-step step-done", "build-step step-done", "build-step step-current"] + ["build-step step-pending"] * 3
    )
    assert label == "test 3 of 6: rand-read-qd1" and progress == "42 % · about 35 s left"
    assert "fio started (PID 4242)" in log
    assert state == "done" and json_link == f"/baselines/{pk}/fio.json"
    assert claims[0].endswith("%") and claims[1] == "–"
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_the_form_says_a_protected_device_cannot_be_measured_and_the_list_shows_baselines(web_server: str) -> None:
    host = make_host(name="lab1")
    protected = make_device(host, name="sys", path="/dev/disk/by-id/ata-SYSTEM", wipe_allowed=False)
    done_baseline(make_device(host, name="ssd0", wipe_allowed=True), days_ago=1, factor=1.0)
    make_user("otto", "operator", password=PASSWORD)
    form = f"/baselines/new/?device={protected.pk}"
    with signed_in(web_server, "otto", form, height=1100) as (page, violations, errors):
        refusal = text(page, "#device-refusal")
        page.screenshot(path=str(ARTIFACTS / "baseline-form.png"), full_page=True)
        page.goto(f"{web_server}/baselines/")
        rows = page.eval_on_selector_all("#baseline-list tbody tr", "rows => rows.length")
        page.screenshot(path=str(ARTIFACTS / "baseline-list.png"), full_page=True)
    assert "does not allow benchlab to wipe" in refusal
    assert rows == 1
    assert not violations, violations
    assert not errors, errors
