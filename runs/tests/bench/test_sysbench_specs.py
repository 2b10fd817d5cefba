"""A sysbench run as the service hands it to the lab and plans around it, without a lab: its
options from the run's fields, its database's estimated size, and the load signature that
decides which kept database it may reuse."""

from pathlib import Path

from runs.bench.services.lab_specs import sysbench_options
from runs.bench.services.reuse import setup_signature
from runs.bench.specs import RunSpec
from runs.bench.sysbench_metrics import sysbench_metrics
from runs.lab.benchmark.results import SysbenchReport
from runs.lab.parse.sysbench import parse_histogram, parse_summary
from runs.lab.sysbench.options import BYTES_PER_SYSBENCH_ROW, SysbenchOptions
from runs.method.facts import spec_facts
from runs.models import Run

SYSBENCH: dict[str, str | int] = {
    "driver": "sysbench", "workload": "oltp_read_write", "sysbench_tables": 4, "sysbench_table_size": 5000,
}  # fmt: skip


def test_a_sysbench_runs_options_are_its_fields_with_pgbenchs_clients_as_threads() -> None:
    run = Run(clients=8, duration_s=30, warmup_s=5, rate_limit_tps=250.0, random_seed=11, **SYSBENCH)
    assert sysbench_options(run) == SysbenchOptions(
        test="oltp_read_write", tables=4, table_size=5000, threads=8, duration_s=30, warmup_s=5, rate_tps=250,
        random_seed=11,
    )  # fmt: skip


def test_a_sysbench_databases_size_is_estimated_from_its_tables_and_rows() -> None:
    spec = RunSpec(server_host_id=1, device_id=1, filesystem="ext4", pg_install_id=1, scale=100, driver="sysbench",
                   workload="oltp_read_write", sysbench_tables=4, sysbench_table_size=5000)  # fmt: skip
    assert spec_facts(spec, None).database_bytes == 4 * 5000 * BYTES_PER_SYSBENCH_ROW == 5_120_000
    assert spec_facts(spec, None).writes is True  # oltp_read_write writes: the durability checks apply


def test_a_kept_database_is_reused_only_by_the_same_driver_loading_the_same_tables() -> None:
    sysbench = setup_signature(Run(**SYSBENCH))
    assert setup_signature(Run(**SYSBENCH)) == sysbench
    assert setup_signature(Run(**(SYSBENCH | {"workload": "oltp_read_only"}))) == sysbench  # same tables
    assert setup_signature(Run(**(SYSBENCH | {"sysbench_table_size": 5001}))) != sysbench
    assert setup_signature(Run(**(SYSBENCH | {"sysbench_tables": 3}))) != sysbench
    assert setup_signature(Run(**(SYSBENCH | {"driver": "pgbench", "workload": "tpcb-like"}))) != sysbench


def test_a_sysbench_runs_metrics_are_its_summary_and_histogram_under_the_keys_the_pages_read() -> None:
    fixture = Path(__file__).resolve().parent.parent / "fixtures/sysbench/oltp_read_write_warmup_1s_time_3s.txt"
    output = fixture.read_text()
    metrics = sysbench_metrics(SysbenchReport(parse_summary(output), parse_histogram(output)))
    assert set(metrics) == {"qps", "reads_per_s", "writes_per_s", "other_per_s", "errors_per_s", "reconnects_per_s",
                            "transactions", "queries", "latency_min_ms", "latency_max_ms", "histogram"}  # fmt: skip
    # The measured window is queries / qps = 9103 / 4511.37 = 2.018 s (after the warm-up's reset): 6384 reads in it.
    assert (metrics["qps"], metrics["reads_per_s"], metrics["writes_per_s"], metrics["other_per_s"]) == (
        4511.37, 3163.86, 887.11, 460.4,
    )  # fmt: skip
    assert (metrics["transactions"], metrics["queries"], metrics["errors_per_s"]) == (447, 9103, 5.45)
    assert metrics["histogram"][0] == [1.272, 1] and len(metrics["histogram"]) == 141
    assert sysbench_metrics(SysbenchReport(None, [])) == {"histogram": []}  # sysbench printed no summary
