"""Seed 004 in a real browser: the campaign form filled by its preset (a warm-up run at 10 clients,
the measurement at 20, a scale in RAM and one beyond) and previewed; a run page drawing the warm-up
run's seconds live on their own chart before the measurement's, which stays empty of them.
Screenshots go to test-artifacts/."""

from datetime import UTC, datetime, timedelta

import pytest

from runs.jobs import live
from runs.models import Campaign, Run, RunState, RunTransition, RunWarmupSample
from runs.tests.bench.test_browser_run_page import publish_samples, publish_state, text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@BROWSER
def test_the_seed_004_preset_fills_the_form_with_its_warm_up_run_and_two_scales(page_server: str) -> None:
    host = make_host(name="lab1", memory_bytes=16 * 2**30, cpu_cores=4)
    make_device(host, name="ssd", kind="ssd", path="/dev/disk/by-id/lab1-ssd", wipe_allowed=True,
                capacity_bytes=500 * 2**30)  # fmt: skip
    make_pg_install(host)
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/campaigns/new/", height=2600) as (page, violations, _errors):
        page.click("text=Read-only on SSD, warm-up then measurement")
        page.wait_for_url("**/campaigns/new/?preset=read-only")
        description = page.input_value("#id_description")
        filled = {name: page.input_value(f"#id_base-{name}") for name in
                  ("workload", "clients", "warmup_run_s", "warmup_run_clients", "duration_s", "scale")}  # fmt: skip
        scales = page.input_value("#id_scale")
        page.click("#preview")
        page.wait_for_selector("#queue")
        matrix = " ".join((page.text_content("#matrix-preview") or "").split())
        page.screenshot(path=str(ARTIFACTS / "campaign-form-seed-004.png"), full_page=True)

    assert filled == {"workload": "select-only", "clients": "20", "warmup_run_s": "300", "warmup_run_clients": "10",
                      "duration_s": "300", "scale": "273"}, filled  # fmt: skip
    assert scales == "273, 2184"
    assert "scale 273 ≈ 4 GiB: fits in RAM (16 GiB); scale 2184 ≈ 32 GiB: exceeds RAM (16 GiB)" in description
    assert "2 configurations × 3 = 6 runs" in matrix, matrix
    assert not Campaign.objects.exists() and not Run.objects.exists()
    assert not violations, violations


@BROWSER
def test_the_run_page_draws_the_warm_up_run_live_on_its_own_chart_before_the_measurement(web_server: str) -> None:
    host = make_host(name="lab1")
    otto = make_user("otto", "operator", password=PASSWORD)
    now = datetime.now(UTC)
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.WARMING_UP, queued_by=otto,
                   workload="select-only", warmup_s=0, duration_s=10, clients=20, threads=2, warmup_run_s=8,
                   warmup_run_clients=10, started_at=now - timedelta(seconds=30))  # fmt: skip
    steps = [(RunState.QUEUED, 30), (RunState.PREPARING_STORAGE, 28), (RunState.INITIALIZING_DATABASE, 20),
             (RunState.WARMING_UP, 4)]  # fmt: skip
    RunTransition.objects.bulk_create(
        RunTransition(run=run, state=s, at=now - timedelta(seconds=ago)) for s, ago in steps
    )
    RunWarmupSample.objects.bulk_create(RunWarmupSample(run=run, second=s, tps=500.0, latency_ms=20.0) for s in (1, 2))
    live.reset_run_stream(run.pk)
    for state, ago in steps:
        publish_state(run, state, now - timedelta(seconds=ago))
    for second in range(1, 5):
        live.publish(run.pk, "warmup_sample", {"second": second, "tps": 500.0 + second, "latency_ms": 20.0})
    with signed_in(web_server, "otto", f"/runs/{run.pk}/", height=1300) as (page, violations, errors):
        wait_until(
            page, "window.benchlabCharts.tps !== undefined && document.getElementById('warmup-chart') !== null", 10_000
        )
        wait_until(
            page, "(document.getElementById('run-position-text').textContent || '').includes('second 4')", 10_000
        )
        while_warming = text(page, "#run-position-text")
        caption = text(page, "#warmup-run-caption")
        warmup_points = page.evaluate(
            "Chart.getChart(document.getElementById('warmup-chart')).data.datasets[0].data.length"
        )
        measured_points = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.length")
        legend = page.evaluate("Chart.getChart(document.getElementById('warmup-chart')).data.datasets[0].label")
        page.screenshot(path=str(ARTIFACTS / "run-page-warmup-run.png"), full_page=True)
        publish_state(run, RunState.MEASURING, datetime.now(UTC))
        publish_samples(run, range(1, 4))
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length === 3", 10_000)
        measuring = text(page, "#run-position-text")
        warmup_after = page.evaluate(
            "Chart.getChart(document.getElementById('warmup-chart')).data.datasets[0].data.length"
        )
        page.screenshot(path=str(ARTIFACTS / "run-page-warmup-run-then-measuring.png"), full_page=True)

    assert while_warming == "warm-up run (10 clients), second 4 of 8; then the measurement", while_warming
    assert caption.startswith("Warm-up run, 10 clients, 8 seconds, in the same cluster right before the measurement"), (
        caption
    )
    assert (warmup_points, measured_points, warmup_after) == (4, 0, 4)
    assert legend == "warm-up run, 10 clients (tps)"
    assert measuring == "measuring, second 3 of 10", measuring
    assert not violations, violations
    assert not errors, errors
