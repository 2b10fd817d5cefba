"""sysbench in a browser: the queue form switching driver (its fields and workloads), the page of
a finished sysbench run (its own figures and the qps line), and a comparison of a pgbench and a
sysbench run (both drivers' metrics, "what differs" naming the driver, the warning about units).
The runs are made here as the lab side stores them (its contract: Run.metrics["sysbench"])."""

import pytest

from runs.compare.query import ComparisonQuery
from runs.compare.selectors.comparison import compare_runs
from runs.models import Run, RunSample, RunState
from runs.tests.bench.test_browser_run_form import lab2
from runs.tests.bench.test_browser_run_page import finished_run, os_series, text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.compare.test_sysbench_comparison import sysbench_metrics
from runs.tests.factories import make_run, make_user

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)
SHOWN = "(() => [...document.querySelectorAll('#run-form [name]')].filter((e) => e.offsetParent !== null)" \
    ".map((e) => e.name))()"  # fmt: skip
OFFERED = "[...document.getElementById('id_workload').options].filter((o) => !o.hidden).map((o) => o.value)"


@BROWSER
def test_the_form_shows_the_chosen_driver_s_fields_and_queues_a_sysbench_run(page_server: str) -> None:
    host = lab2()
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/runs/new/", height=2000) as (page, violations, errors):
        page.select_option("#id_server_host", label=host.name)
        page.select_option("#id_pg_install", label=str(host.pg_installs.get(version="15.19")))
        page.fill("#id_scale", "3")  # pgbench's: sent as unused once the driver is sysbench
        pgbench_fields, pgbench_workloads = page.evaluate(SHOWN), page.evaluate(OFFERED)
        page.select_option("#id_driver", "sysbench")
        sysbench_fields, sysbench_workloads = page.evaluate(SHOWN), page.evaluate(OFFERED)
        chosen = page.eval_on_selector("#id_workload", "(select) => select.value")
        page.fill("#id_sysbench_tables", "4")
        page.fill("#id_sysbench_table_size", "20000")
        page.locator("#workload-fields").screenshot(path=str(ARTIFACTS / "run-form-sysbench.png"))
        page.click("form.run-form button[type=submit]")
        page.wait_for_url(lambda url: "/runs/new/" not in url)
        run_id = int(page.url.rstrip("/").rsplit("/", 1)[-1])

    assert {"scale", "threads", "query_mode", "partitions", "client_hosts"} <= set(pgbench_fields)
    assert not {"sysbench_tables", "sysbench_table_size"} & set(pgbench_fields)
    assert pgbench_workloads == ["tpcb-like", "simple-update", "select-only", "custom", "library"]
    assert {"sysbench_tables", "sysbench_table_size", "clients", "duration_s", "rate_limit_tps"} <= set(sysbench_fields)
    assert not {"scale", "threads", "query_mode", "partitions", "custom_script", "client_hosts", "warmup_run_s"} & set(
        sysbench_fields
    )
    assert sysbench_workloads[0] == "oltp_read_only" and len(sysbench_workloads) == 5
    assert chosen == "oltp_read_write"
    run = Run.objects.get(pk=run_id)
    assert (run.driver, run.workload, run.sysbench_tables, run.sysbench_table_size, run.scale) == (
        "sysbench", "oltp_read_write", 4, 20_000, 10,
    )  # fmt: skip
    assert run.threads == run.clients and run.state == RunState.QUEUED
    assert not violations and not errors, (violations, errors)


def sysbench_run() -> Run:
    run = finished_run(driver="sysbench", workload="oltp_read_write", threads=8, sysbench_tables=4,
                       sysbench_table_size=100_000, client_host=None, metrics=sysbench_metrics(6021.5),
                       latency_p95_ms=5.2, summary={"tps": 301.1})  # fmt: skip
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=t, latency_ms=lat, warmup=s <= 5)
        for s, t, lat in ((s, 290.0 + s, 4.0 + s / 10) for s in range(1, 26))
    )
    os_series(run, 26)
    return run


@BROWSER
def test_a_finished_sysbench_run_s_page_shows_its_own_figures(web_server: str) -> None:
    run = sysbench_run()
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{run.pk}/", height=1600) as (page, violations, errors):
        wait_until(page, "window.benchlabCharts.tps !== undefined", timeout_ms=10_000)
        datasets = page.evaluate("window.benchlabCharts.tps.data.datasets.map((d) => d.label)")
        workload, qps = text(page, "#run-workload"), text(page, "#sysbench-qps")
        errors_s, latency_range = text(page, "#sysbench-errors"), text(page, "#sysbench-latency-range")
        page.locator(".results table").first.screenshot(path=str(ARTIFACTS / "run-page-sysbench-results.png"))
        page.locator("#tps-chart").screenshot(path=str(ARTIFACTS / "run-page-sysbench-chart.png"))

    assert workload.startswith("sysbench oltp_read_write · 4 tables × 100,000 rows · 8 clients")
    assert qps == "6021.5 qps (4215.1 reads · 1204.3 writes · 602.2 other /s)"
    assert errors_s == "0.02 errors/s · 0.00 reconnects/s"
    assert latency_range == "1.100 ms · 48.500 ms"
    # Its samples have no qps (until the lab side stores them): no empty qps axis is drawn.
    assert datasets == ["throughput (tps)", "latency, p95 (ms)"]
    assert not violations and not errors, (violations, errors)


@BROWSER
def test_a_comparison_of_both_drivers_shows_each_one_s_metrics_and_warns_of_their_units(web_server: str) -> None:
    sysbench = sysbench_run()
    pgbench = make_run(sysbench.server_host, sysbench.device, sysbench.pg_install, steady_tps_mean=2011.2,
                       latency_p95_ms=4.1)  # fmt: skip
    ids = f"{pgbench.pk},{sysbench.pk}"
    groups = len(compare_runs(ComparisonQuery(run_ids=(pgbench.pk, sysbench.pk))).groups)
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/compare/?runs={ids}", height=2400) as (page, violations, errors):
        warning = text(page, "#differs-warnings")
        qps_rows = page.locator("table[data-metric='qps'] tbody tr").all_text_contents()
        differs = text(page, "#what-differs")
        page.locator("#differs-warnings").screenshot(path=str(ARTIFACTS / "compare-drivers-warning.png"))
        page.locator("table[data-metric='qps']").screenshot(path=str(ARTIFACTS / "compare-drivers-qps.png"))

    assert groups == 2
    assert "These runs used different drivers (sysbench: group 0; pgbench: group 1)" in warning
    assert "custom script" not in warning and "partitions" not in warning  # fields the driver explains
    assert len(qps_rows) == 2 and "6021.5" in qps_rows[0].replace(",", "") and "too few runs" in qps_rows[1]
    assert "driver" in differs and "pgbench" in differs and "sysbench" in differs
    assert "– (sysbench)" in differs  # the scale, which sysbench does not use
    assert not violations and not errors, (violations, errors)
