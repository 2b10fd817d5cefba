"""pgbench and sysbench runs side by side: sysbench's own metrics where some run has them ("—"
for pgbench's), "what differs" naming the driver, the warning that their transactions are different
units, the exports' driver and qps, the list's driver filter and the run's one-line summary."""

import csv
import io
from typing import Any

import pytest
from django.urls import reverse

from runs.bench.selectors.list_rows import workload_summary
from runs.compare.query import ComparisonQuery
from runs.compare.selectors.comparison import compare_runs
from runs.compare.selectors.export import SERIES_COLUMNS, SUMMARY_COLUMNS, summary_rows
from runs.models import Run, RunSample
from runs.templatetags.run_page import workload_summary as page_summary
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db


def sysbench_metrics(qps: float, errors: float = 0.02) -> dict[str, Any]:
    figures = {"qps": qps, "reads_per_s": qps * 0.7, "writes_per_s": qps * 0.2, "other_per_s": qps * 0.1,
               "errors_per_s": errors, "reconnects_per_s": 0.0, "transactions": 6000, "queries": 120000,
               "latency_min_ms": 1.1, "latency_max_ms": 48.5, "histogram": [[1.1, 10], [2.0, 300]]}  # fmt: skip
    return {"sysbench": figures}


def both_drivers() -> tuple[list[Run], list[Run]]:
    host = make_host()
    lab = (host, make_device(host), make_pg_install(host))
    pgbench = [make_run(*lab, steady_tps_mean=tps, metrics={}) for tps in (500.0, 510.0)]
    sysbench = [
        make_run(
            *lab,
            driver="sysbench",
            workload="oltp_read_write",
            threads=4,
            steady_tps_mean=tps,
            metrics=sysbench_metrics(qps),
        )
        for tps, qps in ((300.0, 6000.0), (310.0, 6200.0))
    ]
    return pgbench, sysbench


def ids(*groups: list[Run]) -> tuple[int, ...]:
    return tuple(run.pk for group in groups for run in group)


def test_sysbench_s_metrics_show_where_a_run_has_them_and_pgbench_s_groups_have_none() -> None:
    pgbench, sysbench = both_drivers()

    result = compare_runs(ComparisonQuery(run_ids=ids(pgbench, sysbench)))

    tables = {table.metric.key: table for table in result.tables}
    assert "qps" in tables and "errors" in tables
    pg_row, sb_row = tables["qps"].rows
    assert pg_row.summary.n == 0 and pg_row.values == []
    assert sb_row.summary.n == 2 and sb_row.summary.mean == 6100.0
    assert tables["errors"].rows[1].summary.mean == pytest.approx(0.02)
    only_pgbench = compare_runs(ComparisonQuery(run_ids=ids(pgbench)))
    assert "qps" not in {table.metric.key for table in only_pgbench.tables}


def test_what_differs_names_the_driver_and_a_warning_says_their_transactions_differ() -> None:
    pgbench, sysbench = both_drivers()

    result = compare_runs(ComparisonQuery(run_ids=ids(pgbench, sysbench)))

    driver = next(d for d in result.differences if d.key == "driver")
    assert (driver.label, driver.cells) == ("driver", ["pgbench", "sysbench"])
    assert [g.label for g in result.groups][1].startswith("driver sysbench")
    assert result.warnings[0].startswith("These runs used different drivers (pgbench: group 0; sysbench: group 1)")
    assert "their tps are different units" in result.warnings[0]
    assert not any("different drivers" in w for w in compare_runs(ComparisonQuery(run_ids=ids(sysbench))).warnings)


def test_the_exports_carry_the_driver_and_qps(client_for: ClientFactory) -> None:
    pgbench, sysbench = both_drivers()
    for run in (pgbench[0], sysbench[0]):
        RunSample.objects.create(run=run, second=1, tps=run.steady_tps_mean or 0, latency_ms=2.0)

    rows = summary_rows(compare_runs(ComparisonQuery(run_ids=ids(pgbench, sysbench))))
    params = {"runs": ",".join(map(str, ids(pgbench, sysbench))), "what": "series"}
    series = list(
        csv.DictReader(io.StringIO(client_for("vera").get(reverse("compare-export-csv"), params).getvalue().decode()))
    )

    assert "driver" in SUMMARY_COLUMNS and "driver" in SERIES_COLUMNS
    qps = [row for row in rows if row["metric"] == "qps"]
    assert [(row["driver"], row["n"], row["mean"]) for row in qps] == [("pgbench", 0, None), ("sysbench", 2, 6100.0)]
    assert {row["metric"] for row in rows} >= {"steady_tps", "qps", "errors"}
    assert [row["driver"] for row in series] == ["pgbench", "sysbench"]


def test_the_run_list_filters_by_driver_and_says_a_sysbench_run_s_data(client_for: ClientFactory) -> None:
    _, sysbench = both_drivers()
    Run.objects.filter(pk=sysbench[0].pk).update(sysbench_tables=4, sysbench_table_size=100_000, clients=8)
    run = Run.objects.get(pk=sysbench[0].pk)

    listed = client_for("vera").get(reverse("runs"), {"driver": "sysbench"})
    bad = client_for("vera").get(reverse("runs"), {"driver": "hammerdb"})

    assert [row.run.pk for row in listed.context["rows"]] == sorted(ids(sysbench), reverse=True)
    assert bad.status_code == 400
    assert workload_summary(run) == ["4 tables × 100,000 rows", "8 clients", f"{run.duration_s} s"]
    assert page_summary(run).startswith("sysbench oltp_read_write · 4 tables × 100,000 rows · 8 clients")
