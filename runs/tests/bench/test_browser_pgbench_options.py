"""pgbench's storage options on the run form, and the run page's per-second latency chart
(percentiles with late and skipped transactions, or an aggregate log's min/mean/max) in a browser."""

import dataclasses
import re

import pytest

from runs.bench.selectors.run_page import run_chart_data, run_latency_series
from runs.models import Run, RunSample, RunState
from runs.tests.bench.test_browser_run_form import lab2
from runs.tests.bench.test_browser_run_page import finished_run, os_series, text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.factories import make_user
from runs.tests.lab.test_pgbench_storage_options import per_second

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)
DATASETS = "window.benchlabCharts['latency-chart'].data.datasets.map((d) => [d.label, d.data.length])"


def limited_run() -> Run:
    """A finished run as the captured rate- and latency-limited pgbench left it (its real log's seconds)."""
    seconds = [dataclasses.asdict(second) for second in per_second(2000)]
    summary = {"tps": 610.96, "transactions_processed": 1828, "skipped": 38, "latency_limit_ms": 2.0,
               "above_latency_limit": 114, "above_latency_limit_pct": 6.236, "partitions": 4,
               "partition_method": "hash"}  # fmt: skip
    run = finished_run(warmup_s=0, duration_s=3, rate_limit_tps=600, latency_limit_ms=2, partitions=4,
                       partition_method="hash", unlogged_tables=True, skipped_transactions=38, summary=summary,
                       metrics={"latency_seconds": seconds, "aggregate": []})  # fmt: skip
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=t, latency_ms=lat, skipped=k)
        for s, t, lat, k in ((1, 625.9, 1.358, 31), (2, 597.0, 0.770, 0), (3, 605.0, 0.9, 7))
    )
    os_series(run, 4)
    return run


@pytest.mark.django_db
def test_the_chart_data_has_the_percentiles_or_else_the_aggregate_logs_intervals() -> None:
    chart = run_chart_data(limited_run())
    interval = {"start_epoch": 1, "count": 4, "latency_count": 4, "latency_sum_us": 8000.0, "latency_min_us": 900.0,
                "latency_max_us": 3000.0, "skipped": 2}  # fmt: skip
    aggregate = Run(metrics={"aggregate": [interval]})  # only its metrics are read

    assert chart["latency_kind"] == "percentiles"
    assert chart["latency"]["p95_ms"] == [3.424, 1.364, 1.467, 0.841] and chart["latency"]["late"] == [98, 4, 12, 0]
    intervals = run_latency_series(aggregate)
    assert intervals["latency_kind"] == "intervals"
    assert intervals["latency"] == {"min_ms": [0.9], "mean_ms": [2.0], "max_ms": [3.0], "skipped": [2]}
    assert run_latency_series(Run(metrics={}))["latency_kind"] == ""  # stored before either: no chart


@BROWSER
def test_the_run_page_draws_latency_percentiles_with_late_and_skipped(web_server: str) -> None:
    run = limited_run()
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{run.pk}/", height=1400) as (page, violations, errors):
        wait_until(page, "window.benchlabCharts['latency-chart'] !== undefined", timeout_ms=10_000)
        datasets = page.evaluate(DATASETS)
        caption, late = text(page, "#latency-caption"), text(page, "#late-transactions")
        workload, skipped = text(page, "#run-workload"), text(page, "#failed-skipped")
        page.locator("#latency-figure").screenshot(path=str(ARTIFACTS / "run-page-latency-percentiles.png"))
        page.locator(".results table").first.screenshot(path=str(ARTIFACTS / "run-page-late-skipped.png"))

    labels = ["p50 (ms)", "p95 (ms)", "p99 (ms)", "late (transactions)", "skipped (transactions)"]
    assert datasets == [[label, 4] for label in labels]
    assert caption.startswith("Latency percentiles per second (p50, p95, p99, ms, left axis)")
    assert "late (above the 2 ms limit)" in caption
    assert late == "114 of 1828 completed (6.236 %)"
    assert "38 skipped" in skipped
    assert "latency limit 2 ms · 4 partitions · hash partitions · unlogged tables" in workload
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_the_form_takes_the_loading_options_and_refuses_bad_steps_beside_them(page_server: str) -> None:
    host = lab2()
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/runs/new/", height=2200) as (page, violations, _errors):
        page.select_option("#id_server_host", label=host.name)
        page.select_option("#id_pg_install", label=str(host.pg_installs.get(version="15.19")))
        page.fill("#id_scale", "5")
        page.fill("#id_partitions", "4")
        page.select_option("#id_partition_method", "hash")
        page.fill("#id_fillfactor", "90")
        page.check("#id_unlogged_tables")
        page.fill("#id_init_steps", "dtgvpf")  # f without ticking foreign keys
        page.fill("#id_rate_limit_tps", "500")
        page.fill("#id_latency_limit_ms", "5")
        fillfactor_refused = page.evaluate(
            "(() => { const f = document.getElementById('id_fillfactor'); f.value = '5';"
            " const under = f.validity.rangeUnderflow; f.value = '90'; return under; })()"
        )
        page.click("form.run-form button[type=submit]")
        page.wait_for_selector("#id_init_steps_error")
        refused = text(page, "#id_init_steps_error")
        page.locator("#init-options").screenshot(path=str(ARTIFACTS / "run-form-init-options-refused.png"))
        page.check("#id_foreign_keys")
        page.click("form.run-form button[type=submit]")
        page.wait_for_url(re.compile(r"/runs/\d+/$"))
        run_id = int(page.url.rstrip("/").rsplit("/", 1)[-1])

    assert fillfactor_refused
    assert refused == "initialisation steps include f (foreign keys): tick foreign keys too, or leave f out"
    run = Run.objects.get(pk=run_id)
    assert (run.partitions, run.partition_method, run.fillfactor, run.unlogged_tables) == (4, "hash", 90, True)
    assert (run.foreign_keys, run.init_steps, run.latency_limit_ms, run.state) == (True, "dtgvpf", 5.0, RunState.QUEUED)
    assert violations == []


@BROWSER
def test_the_campaign_page_sweeps_partitions_and_unlogged_tables_and_previews_them(page_server: str) -> None:
    host = lab2()
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/campaigns/new/", height=2400) as (page, violations, _errors):
        page.fill("#id_name", "partitions")
        page.select_option("#id_base-server_host", label=host.name)
        page.select_option("#id_base-device", label="lab2:ram")
        page.select_option("#id_base-pg_install", label=str(host.pg_installs.get(version="15.19")))
        page.fill("#id_base-scale", "2")
        page.fill("#id_partitions", "0, 4")
        page.check("input[name='unlogged_tables'][value='yes']")
        page.click("#preview")
        page.wait_for_selector("#queue")
        rows = [[cell.strip() for cell in row.locator("td").all_text_contents()]
                for row in page.locator("tr.cell-ok, tr.cell-rejected").all()]  # fmt: skip
        durability = text(page, "#method-warnings")
        page.locator("#matrix-preview").screenshot(path=str(ARTIFACTS / "campaign-form-partitions.png"))

    assert rows == [["1", "not partitioned", "unlogged tables", "yes"], ["2", "4 partitions", "unlogged tables", "yes"]]
    assert "not durable: the tables are unlogged" in durability and "To change: load logged tables, or" in durability
    assert not Run.objects.exists()
    assert violations == []
