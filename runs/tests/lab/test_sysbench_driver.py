"""sysbench, the second driver, without a lab: its output parsed from real captured fixtures
(runs/tests/fixtures/sysbench/, numbers checked by hand against the files), its command lines,
the latency percentiles from its histogram, and the resume record that carries the driver."""

import dataclasses
import json
from pathlib import Path
from typing import cast

import pytest

from runs.lab.benchmark.collect import resume_record
from runs.lab.benchmark.drivers import DRIVERS, Pgbench, Sysbench, driver_for
from runs.lab.benchmark.metrics import PgStatsSnapshot
from runs.lab.benchmark.results import BenchmarkResult
from runs.lab.benchmark.resume import parse_resume_record
from runs.lab.benchmark.run import BenchmarkSpec, run_benchmark, run_dir_for, work_dir_for
from runs.lab.errors import InvalidOption, LabError
from runs.lab.parse.sysbench import (
    histogram_percentile,
    parse_histogram,
    parse_report_line,
    parse_summary,
)
from runs.lab.pgbench.commands import Connection
from runs.lab.postgres.cluster import Cluster
from runs.lab.storage.prepare import PreparedStorage
from runs.lab.sysbench.commands import prepare_command, run_command
from runs.lab.sysbench.options import SysbenchOptions
from runs.lab.transport.interface import CommandResult, Transport
from runs.lab.transport.process import Detached
from runs.tests.lab.test_resume_record import SPEC, record

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysbench"
READ_WRITE = (FIXTURES / "oltp_read_write_warmup_1s_time_3s.txt").read_text()
POINT_SELECT = (FIXTURES / "oltp_point_select_rate_200_time_2s.txt").read_text()
SOCKET = Connection(host="/var/run/benchlab-pg", port=54321, database="bench", user="bench")


def test_it_reads_every_report_line_and_skips_the_checkpoint_report_and_queue_lines() -> None:
    seconds = [s for line in READ_WRITE.splitlines() if (s := parse_report_line(line)) is not None]
    assert [s.second for s in seconds] == [1, 2, 3]
    second = seconds[1]  # [ 2s ] thds: 2 tps: 186.38 qps: 3837.93 (r/w/o: 2693.56/750.55/393.81) lat (ms,95%): 14.21
    assert (second.threads, second.tps, second.qps) == (2, 186.38, 3837.93)
    assert (second.reads_per_s, second.writes_per_s, second.other_per_s) == (2693.56, 750.55, 393.81)
    assert (second.percentile, second.latency_ms, second.errors_per_s, second.reconnects_per_s) == (95, 14.21, 7.01, 0)
    sample = second.as_sample()
    assert (sample.elapsed_s, sample.tps, sample.qps, sample.latency_p95_ms) == (2.0, 186.38, 3837.93, 14.21)
    assert sample.latency_ms is None  # sysbench prints no mean a second: none is made up
    rated = [s for line in POINT_SELECT.splitlines() if (s := parse_report_line(line)) is not None]
    assert [(s.second, s.tps) for s in rated] == [(1, 192.57), (2, 176.72)]
    assert parse_report_line("[ 1s ] queue length: 0, concurrency: 0") is None


def test_it_reads_the_final_summary_after_the_warm_up_checkpoint_not_the_checkpoint_report() -> None:
    summary = parse_summary(READ_WRITE)
    assert summary is not None
    # The checkpoint report at 1 s says 80 transactions; the final summary (after the reset) 447.
    assert (summary.transactions, summary.tps, summary.queries, summary.qps) == (447, 221.53, 9103, 4511.37)
    assert (summary.reads, summary.writes, summary.other) == (6384, 1790, 929)
    assert (summary.errors, summary.errors_per_s, summary.reconnects) == (11, 5.45, 0)
    assert (summary.total_time_s, summary.events) == (3.019, 447)
    assert (summary.latency_min_ms, summary.latency_avg_ms, summary.latency_max_ms) == (1.28, 11.74, 1015.08)
    assert (summary.latency_percentile_ms, summary.latency_sum_ms) == (16.12, 5247.33)
    assert parse_summary("sysbench 1.0.20\nFATAL: connection to server failed\n") is None


def test_it_computes_percentiles_from_the_histogram_as_sysbench_does() -> None:
    histogram = parse_histogram(READ_WRITE)
    assert len(histogram) == 141 and histogram[0] == (1.272, 1) and histogram[-1] == (1013.597, 2)
    assert sum(count for _, count in histogram) == 447  # the measured window's only: reset at the checkpoint
    # Hand-checked: the 425th of 447 (95 %) lies in bucket 16.115 (sysbench's own 95th: 16.12); the 443rd
    # (99 %) in 24.384: above it lie only 27.659, 43.385 and the two 1013.597.
    assert histogram_percentile(histogram, 95) == 16.115
    assert histogram_percentile(histogram, 99) == 24.384
    assert histogram_percentile(histogram, 50) == 6.433
    point = parse_histogram(POINT_SELECT)
    assert sum(count for _, count in point) == 370 and histogram_percentile(point, 95) == 0.456  # sysbench: 0.46
    assert histogram_percentile([], 95) is None
    assert histogram_percentile([(1.0, 1), (2.0, 1), (3.0, 2)], 50) == 2.0  # the 2nd of 4
    # The last bucket's value above the largest latency sysbench saw: the maximum, not the bucket.
    assert histogram_percentile([(1.0, 98), (1013.597, 2)], 99, at_most=1008.44) == 1008.44
    assert histogram_percentile([(1.0, 98), (1013.597, 2)], 50, at_most=1008.44) == 1.0


def test_its_command_lines_load_and_measure_with_a_warm_up_cut_off_by_a_report_checkpoint() -> None:
    options = SysbenchOptions(test="oltp_read_only", tables=2, table_size=1000, threads=4, duration_s=3, warmup_s=2,
                              rate_tps=100, random_seed=7)  # fmt: skip
    common = ["sysbench", "oltp_read_only", "--db-driver=pgsql", "--pgsql-host=/var/run/benchlab-pg",
              "--pgsql-port=54321", "--pgsql-user=bench", "--pgsql-db=bench", "--tables=2",
              "--table-size=1000"]  # fmt: skip
    assert prepare_command(SOCKET, options) == [*common, "prepare"]
    assert run_command(SOCKET, options) == [
        *common, "--threads=4", "--time=5", "--report-checkpoints=2", "--rate=100", "--rand-seed=7",
        "--report-interval=1", "--histogram=on", "--percentile=95", "run",
    ]  # fmt: skip
    plain = run_command(SOCKET, SysbenchOptions(test="oltp_insert", duration_s=3))
    assert "--time=3" in plain and not any(a.startswith(("--report-checkpoints", "--rate=", "--rand")) for a in plain)
    with pytest.raises(InvalidOption, match="is not one of oltp_read_only"):
        run_command(SOCKET, SysbenchOptions(test="tpcb-like"))
    with pytest.raises(InvalidOption, match="bad database or role name"):
        prepare_command(dataclasses.replace(SOCKET, database="bench; drop"), options)


def test_the_drivers_are_registered_by_name_and_differ_in_where_their_report_goes() -> None:
    assert set(DRIVERS) == {"pgbench", "sysbench"}
    assert isinstance(driver_for("pgbench"), Pgbench) and isinstance(driver_for("sysbench"), Sysbench)
    assert (DRIVERS["pgbench"].progress_stream, DRIVERS["sysbench"].progress_stream) == ("stderr", "stdout")
    line = (
        "[ 1s ] thds: 1 tps: 192.57 qps: 192.57 (r/w/o: 192.57/0.00/0.00) lat (ms,95%): 0.77 err/s: 0.00 reconn/s: 0.00"
    )
    assert DRIVERS["sysbench"].progress(line) is not None and DRIVERS["pgbench"].progress(line) is None
    with pytest.raises(ValueError, match="driver 'hammerdb' is not one of pgbench, sysbench"):
        driver_for("hammerdb")


SYSBENCH_SPEC = dataclasses.replace(
    SPEC, driver="sysbench", sysbench=SysbenchOptions(test="oltp_read_only", table_size=1000, duration_s=3)
)


def sysbench_record() -> dict[str, object]:
    data = record()
    data["pgbench"]["name"] = "sysbench"  # the process is named after its driver
    data["driver"] = "sysbench"
    return data


def test_the_resume_record_carries_the_driver_and_a_reattached_worker_follows_that_one() -> None:
    written = record()
    assert written["driver"] == "pgbench"  # pgbench's record says so too
    parsed = parse_resume_record(json.loads(json.dumps(sysbench_record())), SYSBENCH_SPEC)
    assert parsed.driver == "sysbench"
    assert parsed.pgbench.name == "sysbench" and parsed.pgbench.run_dir == work_dir_for(run_dir_for(SPEC.run_key))
    assert resume_record(SPEC.run_key, *_record_args(), driver="sysbench").as_json()["driver"] == "sysbench"


def _record_args() -> tuple[BenchmarkResult, Cluster, Detached, bool, PgStatsSnapshot, None]:
    storage = PreparedStorage("/mnt/x", "ext4", "/dev/sdb", "rw", "mkfs.ext4 /dev/sdb")
    process = Detached(run_dir="/tmp/x", name="sysbench", pid=42, user="benchlab-run")
    return (
        BenchmarkResult(storage=storage),
        Cluster("/b", "/mnt/x/postgres", 54321),
        process,
        True,
        PgStatsSnapshot({}, {}),
        None,
    )


@pytest.mark.parametrize(
    ("spec", "data", "refusal"),
    [
        (SYSBENCH_SPEC, record(), "the record's driver 'pgbench' is not the run's sysbench"),
        (SPEC, sysbench_record(), "the record's driver 'sysbench' is not the run's pgbench"),
        (SYSBENCH_SPEC, sysbench_record() | {"pgbench": record()["pgbench"]}, "not sysbench of"),
    ],
)
def test_a_record_of_another_driver_is_refused(spec: BenchmarkSpec, data: dict[str, object], refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        parse_resume_record(json.loads(json.dumps(data)), spec)


def test_a_record_written_before_the_driver_was_recorded_is_pgbench_s() -> None:
    data = record()
    del data["driver"]
    assert parse_resume_record(data, SPEC).driver == "pgbench"


class NoSysbenchHost:
    """A host without sysbench: records what the run asks of it (run() is all the run gets to call)."""

    label = "lab9"

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def run(self, argv: list[str], check: bool = True) -> CommandResult:
        self.asked.append(argv)
        return CommandResult(" ".join(argv), 1, "", "")


def test_a_host_without_sysbench_fails_the_run_before_anything_else_is_done_on_it() -> None:
    host = NoSysbenchHost()
    with pytest.raises(LabError, match="sysbench is not installed on lab9: install Debian's package sysbench"):
        run_benchmark(cast(Transport, host), lambda: cast(Transport, host), SYSBENCH_SPEC)
    assert host.asked == [["sh", "-c", "command -v sysbench"]]  # no storage check, no mkfs, no mount


def test_a_sysbench_run_with_bad_options_is_refused_before_the_host_is_asked_anything() -> None:
    host = NoSysbenchHost()
    bad = dataclasses.replace(SYSBENCH_SPEC, sysbench=SysbenchOptions(test="oltp_read_only", tables=0))
    with pytest.raises(InvalidOption, match="sysbench tables must be a whole number from 1 to 1,000, not 0"):
        run_benchmark(cast(Transport, host), lambda: cast(Transport, host), bad)
    assert host.asked == []
