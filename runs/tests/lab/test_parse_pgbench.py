"""The parsers against real captured output (runs/tests/fixtures/README.md says where each file comes from).

Expected values were read off the fixture text by eye.
"""

import math
import statistics
from fractions import Fraction

import pytest

from runs.lab.parse.pgbench import ProgressSample, parse_progress_line
from runs.lab.parse.pgbench_logs import (
    AggregateInterval,
    merge_aggregate_intervals,
    parse_aggregate_line,
    parse_aggregate_log,
)
from runs.lab.parse.pgbench_summary import InitDone, PgbenchSummary, parse_init_done, parse_summary
from runs.tests.captured import captured


def progress_of(name: str) -> list[ProgressSample]:
    return [s for line in captured(name).splitlines() if (s := parse_progress_line(line)) is not None]


def summary_of(run: str) -> PgbenchSummary:
    return parse_summary(captured(f"pgbench15/{run}.stdout.txt"), captured(f"pgbench15/{run}.stderr.txt"))


# --- progress lines ------------------------------------------------------------------------------


def test_it_parses_every_progress_line_of_a_pgbench15_run() -> None:
    samples = progress_of("pgbench15/tpcb_T5_progress.stderr.txt")

    assert [s.elapsed_s for s in samples] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert samples[0] == ProgressSample(elapsed_s=1.0, tps=1942.6, latency_ms=2.033, latency_stddev_ms=1.538, failed=0)
    assert samples[4].tps == 2375.9
    assert samples[4].latency_stddev_ms == 0.946


def test_it_returns_none_for_lines_that_are_not_progress() -> None:
    assert parse_progress_line("starting vacuum...end.") is None
    assert parse_progress_line("pgbench: error: Run was aborted; the above results are incomplete.") is None
    assert parse_progress_line("") is None
    assert parse_progress_line("progress: soon") is None


def test_it_reads_lag_and_skipped_on_rate_limited_progress_lines() -> None:
    samples = progress_of("pgbench15/rate_limited.stderr.txt")

    assert len(samples) == 4
    assert samples[3] == ProgressSample(
        elapsed_s=4.0, tps=195.0, latency_ms=1.699, latency_stddev_ms=0.477, failed=0, lag_ms=0.111, skipped=2
    )
    assert [s.skipped for s in samples] == [1, 1, 1, 2]


def test_it_reads_failed_retried_and_retries_on_progress_lines() -> None:
    first = progress_of("pgbench15/serializable_retries.stderr.txt")[0]

    assert first == ProgressSample(
        elapsed_s=1.0, tps=416.9, latency_ms=3.915, latency_stddev_ms=2.227, failed=860, retried=1059, retries=2000
    )
    assert first.lag_ms is None


def test_it_keeps_the_epoch_of_progress_timestamp_lines() -> None:
    samples = progress_of("pgbench15/progress_timestamp.stderr.txt")

    assert [s.elapsed_s for s in samples] == [1795313369.758, 1795313370.758, 1795313371.758]
    assert samples[2].tps == 31994.4


def test_it_reads_progress_lines_of_pgbench_before_14_which_have_no_failed_field() -> None:
    samples = progress_of("pgbench_pre14/pg11_extended_t5000_terminal.txt")

    assert samples == [
        ProgressSample(elapsed_s=10.0, tps=15344.0, latency_ms=4.166, latency_stddev_ms=2.496),
        ProgressSample(elapsed_s=20.0, tps=15826.2, latency_ms=4.043, latency_stddev_ms=2.430),
    ]
    assert samples[0].failed is None


# --- summary -------------------------------------------------------------------------------------


def test_it_parses_every_field_of_a_pgbench15_duration_run() -> None:
    summary = summary_of("tpcb_T5_progress")

    assert summary == PgbenchSummary(
        pgbench_version="15.20 (Debian 15.20-0+deb12u1)",
        transaction_type="<builtin: TPC-B (sort of)>",
        scaling_factor=2,
        query_mode="simple",
        clients=4,
        threads=2,
        max_tries=1,
        duration_s=5,
        transactions_processed=11048,
        failed=0,
        failed_pct=0.0,
        latency_avg_ms=1.803,
        latency_stddev_ms=0.945,
        initial_connection_time_ms=8.070,
        tps=2209.234151,
        tps_note="without initial connection time",
    )
    assert summary.comparable_tps == 2209.234151
    assert summary.aborted is False


def test_it_parses_the_transactions_per_client_form() -> None:
    summary = summary_of("tpcb_t500")

    assert summary.transactions_per_client == 500
    assert (summary.transactions_processed, summary.transactions_planned) == (2000, 2000)
    assert summary.duration_s is None
    assert summary.latency_avg_ms == 1.501
    assert summary.latency_stddev_ms is None  # pgbench prints it only with -P, -R or -L
    assert summary.tps == 2664.279472


def test_it_parses_skipped_latency_limit_and_schedule_lag_of_a_rate_limited_run() -> None:
    summary = summary_of("rate_limited")

    assert (summary.transactions_processed, summary.failed) == (1034, 0)
    assert (summary.skipped, summary.skipped_pct) == (5, 0.481)
    assert summary.latency_limit_ms == 1.0
    assert (summary.above_latency_limit, summary.above_latency_limit_pct) == (935, 90.426)
    assert (summary.latency_avg_ms, summary.latency_stddev_ms) == (1.645, 0.687)
    assert (summary.lag_avg_ms, summary.lag_max_ms) == (0.100, 1.710)
    assert summary.initial_connection_time_ms == 7.612
    assert summary.tps == 207.282263


def test_it_parses_failures_and_retries_and_ignores_statement_latencies() -> None:
    summary = summary_of("serializable_retries")

    assert summary.max_tries == 3
    assert (summary.failed, summary.failed_pct) == (3362, 67.012)
    assert (summary.serialization_failures, summary.serialization_failures_pct) == (3362, 67.012)
    assert (summary.deadlock_failures, summary.deadlock_failures_pct) == (0, 0.0)
    assert (summary.retried, summary.retried_pct) == (4062, 80.965)
    assert summary.total_retries == 7722
    assert (summary.latency_avg_ms, summary.latency_stddev_ms) == (3.815, 2.220)
    assert summary.tps == 413.460164


def test_it_notes_when_the_latency_average_includes_failures() -> None:
    summary = parse_summary(captured("pgbench15/aggregate_serializable/run.stdout.txt"))

    assert summary.latency_avg_ms == 5.703
    assert summary.latency_avg_includes_failures is True
    assert summary_of("serializable_retries").latency_avg_includes_failures is False


def test_it_parses_a_select_only_prepared_run() -> None:
    summary = summary_of("select_only_prepared")

    assert summary.transaction_type == "<builtin: select only>"
    assert summary.query_mode == "prepared"
    assert (summary.clients, summary.threads, summary.duration_s) == (2, 2, 3)
    assert summary.transactions_processed == 182600
    assert summary.tps == 60905.991635


def test_it_parses_connection_per_transaction_runs() -> None:
    summary = summary_of("connect_each")

    assert summary.average_connection_time_ms == 3.923
    assert summary.initial_connection_time_ms is None
    assert summary.tps == 247.098712
    assert summary.tps_note == "including reconnection times"


def test_it_takes_the_run_totals_not_the_per_script_lines() -> None:
    summary = summary_of("multi_script")

    assert summary.transaction_type == "multiple scripts"
    assert summary.transactions_processed == 5239
    assert summary.latency_avg_ms == 0.763  # the scripts' own averages are 0.977 and 0.144
    assert summary.latency_stddev_ms is None  # only the per-script blocks print one
    assert summary.tps == 2621.917408


def test_it_parses_what_an_aborted_run_printed_before_stopping() -> None:
    summary = summary_of("aborted")

    assert captured("pgbench15/aborted.exit_code.txt").strip() == "2"
    assert summary.aborted is True
    assert summary.transaction_type == "div_zero.sql"
    assert summary.transactions_processed == 0
    assert (summary.failed, summary.failed_pct) == (0, None)  # pgbench prints "(NaN%)"
    assert summary.latency_avg_ms is None
    assert summary.tps is None
    assert summary.comparable_tps is None
    assert summary.errors == (
        "pgbench: error: client 0 script 0 aborted in command 0 query 0: ERROR:  division by zero",
        "pgbench: error: client 1 script 0 aborted in command 0 query 0: ERROR:  division by zero",
        "pgbench: error: Run was aborted; the above results are incomplete.",
    )


def test_it_marks_a_run_aborted_midway_even_though_it_printed_a_tps() -> None:
    summary = summary_of("aborted_midrun")

    assert captured("pgbench15/aborted_midrun.exit_code.txt").strip() == "2"
    assert summary.aborted is True
    assert summary.transactions_processed == 83748
    assert summary.tps == 31698.905065
    assert len(progress_of("pgbench15/aborted_midrun.stderr.txt")) == 2


def test_it_finds_the_abort_message_on_stdout_too() -> None:
    assert parse_summary("number of clients: 2\n").aborted is False
    assert parse_summary("pgbench: error: Run was aborted; the above results are incomplete.").aborted is True


def test_it_survives_unknown_and_malformed_lines() -> None:
    summary = parse_summary("a new pgbench line: 42\nnumber of clients: many\n\nscaling factor: 7\n")

    assert summary.clients is None
    assert summary.scaling_factor == 7


def test_it_parses_the_pgbench_84_summary_with_including_and_excluding_tps() -> None:
    summary = parse_summary(captured("pgbench_pre14/pg84_docs_typical.stdout.txt"))

    assert summary == PgbenchSummary(
        transaction_type="TPC-B (sort of)",
        scaling_factor=10,
        query_mode="simple",
        clients=10,
        transactions_per_client=1000,
        transactions_processed=10000,
        transactions_planned=10000,
        tps_including_connections=85.184871,
        tps_excluding_connections=85.296346,
    )
    assert summary.comparable_tps == 85.296346


def test_it_parses_the_pgbench_13_summary_and_ignores_its_script_statistics() -> None:
    summary = parse_summary(captured("pgbench_pre14/pg13_docs_per_statement.stdout.txt"))

    assert summary.transaction_type == "<builtin: TPC-B (sort of)>"
    assert (summary.clients, summary.threads, summary.scaling_factor) == (10, 1, 1)
    assert (summary.latency_avg_ms, summary.latency_stddev_ms) == (15.844, 2.715)
    assert summary.tps_including_connections == 618.764555
    assert summary.tps_excluding_connections == 622.977698
    assert summary.tps is None
    assert (summary.failed, summary.max_tries) == (None, None)


def test_it_parses_a_pgbench_11_terminal_capture_with_progress_lines_mixed_in() -> None:
    summary = parse_summary(captured("pgbench_pre14/pg11_extended_t5000_terminal.txt"))

    assert summary.query_mode == "extended"
    assert (summary.clients, summary.threads, summary.transactions_per_client) == (64, 64, 5000)
    assert (summary.transactions_processed, summary.transactions_planned) == (320000, 320000)
    assert (summary.latency_avg_ms, summary.latency_stddev_ms) == (4.093, 2.453)
    assert summary.comparable_tps == 15509.394300


def test_it_parses_a_pgbench_9_duration_run() -> None:
    summary = parse_summary(captured("pgbench_pre14/pg9x_T300_r_gist.stdout.txt"))

    assert (summary.duration_s, summary.threads, summary.scaling_factor) == (300, 2, 300)
    assert summary.transactions_processed == 33237
    assert summary.transactions_planned is None
    assert summary.latency_avg_ms is None
    assert summary.tps_excluding_connections == 110.792180


# --- pgbench -i ----------------------------------------------------------------------------------


def test_it_parses_the_done_in_line() -> None:
    text = captured("pgbench15/init_default.stderr.txt")

    assert parse_init_done(text) == InitDone(
        total_s=0.44,
        steps=(
            ("drop tables", 0.00),
            ("create tables", 0.00),
            ("client-side generate", 0.21),
            ("vacuum", 0.10),
            ("primary keys", 0.12),
        ),
    )


def test_it_parses_quiet_and_server_side_init() -> None:
    quiet = captured("pgbench15/init_quiet.stderr.txt")
    server_side = parse_init_done(captured("pgbench15/init_server_side.stderr.txt"))

    assert parse_init_done(quiet) == InitDone(
        0.47,
        (
            ("drop tables", 0.01),
            ("create tables", 0.00),
            ("client-side generate", 0.25),
            ("vacuum", 0.11),
            ("primary keys", 0.09),
        ),
    )
    assert server_side is not None
    assert server_side.total_s == 0.62
    assert dict(server_side.steps)["server-side generate"] == 0.36
    assert dict(server_side.steps)["foreign keys"] == 0.05
    assert "client-side generate" not in dict(server_side.steps)


def test_pgbench_11_has_no_done_in_line() -> None:
    text = captured("pgbench_pre14/pg11_init_s100.stderr.txt")

    assert parse_init_done(text) is None
    assert parse_init_done("vacuuming...\ncreating primary keys...\ndone.\n") is None


# --- aggregate logs ------------------------------------------------------------------------------

AGGREGATE = "pgbench15/aggregate"


def test_it_parses_a_pgbench15_aggregate_line() -> None:
    interval = parse_aggregate_line(captured(f"{AGGREGATE}/pgbench_log.13131").splitlines()[0])

    assert interval == AggregateInterval(
        start_epoch=1795313238,
        count=274,
        latency_count=274,
        latency_sum_us=779572,
        latency_sum2_us2=3318235422,
        latency_min_us=870,
        latency_max_us=12071,
        lag_sum_us=0,
        lag_sum2_us2=0,
        lag_min_us=0,
        lag_max_us=0,
        skipped=0,
        retried=0,
        retries=0,
        serialization_failures=0,
        deadlock_failures=0,
    )
    assert interval.latency_mean_ms == pytest.approx(779572 / 274 / 1000)


def test_a_truncated_aggregate_line_is_skipped_not_fatal() -> None:
    lines = captured(f"{AGGREGATE}/pgbench_log.13131").splitlines()
    damaged = "\n".join([lines[0], lines[1][:9], *lines[2:]])  # a line cut short, as by a full disk

    intervals = parse_aggregate_log(damaged)

    assert [i.start_epoch for i in intervals] == [
        parse_aggregate_line(line).start_epoch for line in lines if line != lines[1]
    ]


def test_it_parses_lag_and_skipped_columns_of_a_rate_limited_aggregate_log() -> None:
    interval = parse_aggregate_log(captured("pgbench15/aggregate_rate/pgbench_log.13175"))[0]

    assert (interval.count, interval.skipped) == (36, 3)
    assert (interval.lag_sum_us, interval.lag_sum2_us2, interval.lag_min_us, interval.lag_max_us) == (
        4910,
        1922038,
        1,
        956,
    )
    assert interval.lag_mean_ms == pytest.approx(4910 / 36 / 1000)


def test_it_parses_retry_and_failure_columns() -> None:
    interval = parse_aggregate_log(captured("pgbench15/aggregate_serializable/pgbench_log.13373"))[2]

    assert (interval.count, interval.retried, interval.retries) == (314, 640, 1205)
    assert (interval.serialization_failures, interval.deadlock_failures) == (517, 0)
    docs = parse_aggregate_log(captured("pgbench15/docs_aggregate_failures_detailed.log"))
    assert (docs[0].skipped, docs[0].retried, docs[0].retries, docs[0].serialization_failures) == (
        64,
        7564,
        28340,
        4148,
    )
    assert (docs[1].lag_min_us, docs[1].lag_max_us) == (0, 9998)


def test_it_parses_the_six_column_aggregate_log_of_older_pgbench() -> None:
    intervals = parse_aggregate_log(captured("pgbench_pre14/pg13_docs_aggregate.log"))

    assert [i.start_epoch for i in intervals] == [1345828501, 1345828503, 1345828505, 1345828507, 1345828509]
    assert intervals[4].latency_min_us == 236
    assert (intervals[0].lag_sum_us, intervals[0].skipped, intervals[0].retried) == (None, None, None)
    assert intervals[0].latency_mean_ms == pytest.approx(1542744 / 5601 / 1000)


def test_it_does_not_count_skipped_transactions_in_old_latency_sums() -> None:
    # pgbench 9.5-14 with -R and -L: 11 columns, and the count includes the skipped ones.
    interval = parse_aggregate_line("1345828501 10 20000 50000000 1000 3000 500 30000 10 90 2")

    assert (interval.count, interval.skipped, interval.latency_count) == (10, 2, 8)
    assert interval.latency_mean_ms == 2.5


def test_it_refuses_a_line_that_is_not_an_aggregate_line() -> None:
    with pytest.raises(ValueError, match="not a pgbench aggregate log line"):
        parse_aggregate_line("progress: 1.0 s, 1942.6 tps, lat 2.033 ms stddev 1.538, 0 failed")


def test_it_merges_two_thread_logs_second_by_second() -> None:
    thread0 = parse_aggregate_log(captured(f"{AGGREGATE}/pgbench_log.13131"))
    thread1 = parse_aggregate_log(captured(f"{AGGREGATE}/pgbench_log.13131.1"))

    merged = merge_aggregate_intervals(thread0, thread1)

    assert [m.start_epoch for m in merged] == [1795313238, 1795313239, 1795313240, 1795313241]
    first = merged[0]
    assert (first.count, first.latency_sum_us, first.latency_sum2_us2) == (
        274 + 282,
        779572 + 779335,
        3318235422 + 3173305309,
    )
    assert (first.latency_min_us, first.latency_max_us) == (704, 13310)  # min of 870/704, max of 12071/13310
    # Independently, exactly: mean = Σx/n, population variance = Σx²/n - mean².
    n = 274 + 282
    mean_us = Fraction(779572 + 779335, n)
    variance = Fraction(3318235422 + 3173305309, n) - mean_us**2
    assert first.latency_mean_ms == pytest.approx(float(mean_us) / 1000, rel=1e-12)
    assert first.latency_stddev_ms == pytest.approx(math.sqrt(variance) / 1000, rel=1e-9)


def test_it_computes_mean_and_sd_exactly_like_pstdev_over_the_transactions() -> None:
    # Two threads' latencies (µs) in the same second, logged the way pgbench sums them.
    thread_a, thread_b = [1200, 900, 4300, 2500], [800, 15000, 1100]

    def log_line(latencies: list[int]) -> str:
        n, total, squares = len(latencies), sum(latencies), sum(x * x for x in latencies)
        return f"1795313238 {n} {total} {squares} {min(latencies)} {max(latencies)} 0 0 0 0 0 0 0 0 0"

    (merged,) = merge_aggregate_intervals(
        [parse_aggregate_line(log_line(thread_a))], [parse_aggregate_line(log_line(thread_b))]
    )

    every = thread_a + thread_b
    assert merged.latency_mean_ms == pytest.approx(statistics.fmean(every) / 1000, rel=1e-12)
    assert merged.latency_stddev_ms == pytest.approx(statistics.pstdev(every) / 1000, rel=1e-12)
    assert (merged.latency_min_us, merged.latency_max_us) == (800, 15000)


def test_it_ignores_the_zeros_of_an_empty_interval_when_merging() -> None:
    busy = parse_aggregate_log(captured("pgbench15/aggregate_rate/pgbench_log.13175.1"))[0]
    idle = parse_aggregate_line(f"{busy.start_epoch} 0 0 0 0 0 0 0 0 0 0 0 0 0 0")

    (merged,) = merge_aggregate_intervals([idle], [busy])

    assert (merged.count, merged.latency_min_us, merged.latency_max_us) == (32, 928, 21309)
    assert (merged.lag_min_us, merged.lag_max_us) == (23, 1062)
    assert idle.latency_mean_ms is None
    assert idle.latency_stddev_ms is None
