"""Several client hosts' figures made into the run's own, on small hand-checked data."""

import math

import pytest

from runs.lab.parse.pgbench import ProgressSample
from runs.lab.parse.pgbench_summary import PgbenchSummary
from runs.lab.pgbench.client_totals import ProgressTotals, total_progress, total_summary
from runs.lab.pgbench.latency import LatencyHistogram, merged_percentiles, parse_histogram_output


def test_a_seconds_total_sums_throughput_and_weights_latency_by_it() -> None:
    a = ProgressSample(elapsed_s=3.0, tps=100.0, latency_ms=1.0, latency_stddev_ms=0.0, failed=1)
    b = ProgressSample(elapsed_s=3.0, tps=300.0, latency_ms=3.0, latency_stddev_ms=0.0, failed=2)

    total = total_progress([a, b])

    assert total.tps == 400.0 and total.failed == 3 and total.elapsed_s == 3.0
    assert total.latency_ms == pytest.approx((100 * 1 + 300 * 3) / 400)  # 2.5
    # No spread within either client, yet they differ: the total's spread is theirs around 2.5 ms.
    # variance = (100 * 1.5² + 300 * 0.5²) / 400 = 0.75
    assert total.latency_stddev_ms == pytest.approx(math.sqrt(0.75))
    assert total.lag_ms is None and total.skipped is None  # nobody printed them


def test_a_summary_total_adds_counts_and_throughput_and_weights_means_by_transactions() -> None:
    one = PgbenchSummary(clients=4, threads=2, transactions_processed=1000, failed=0, tps=500.0,
                         latency_avg_ms=2.0, latency_stddev_ms=1.0, scaling_factor=10, lag_max_ms=None)  # fmt: skip
    two = PgbenchSummary(clients=4, threads=2, transactions_processed=3000, failed=4, tps=1500.0,
                         latency_avg_ms=4.0, latency_stddev_ms=1.0, scaling_factor=10, errors=("x",))  # fmt: skip

    total = total_summary([one, two])

    assert (total.clients, total.threads, total.transactions_processed, total.failed) == (8, 4, 4000, 4)
    assert total.tps == 2000.0 and total.comparable_tps == 2000.0
    assert total.latency_avg_ms == pytest.approx((1000 * 2 + 3000 * 4) / 4000)  # 3.5
    # (1000 * (1 + 1.5²) + 3000 * (1 + 0.5²)) / 4000 = (3250 + 3750) / 4000 = 1.75
    assert total.latency_stddev_ms == pytest.approx(math.sqrt(1.75))
    assert total.failed_pct == pytest.approx(100 * 4 / 4004)
    assert total.scaling_factor == 10 and total.errors == ("x",)


def test_seconds_are_handed_on_in_order_once_every_running_client_reported_them() -> None:
    totals = ProgressTotals(clients=2)

    def second(s: float, tps: float) -> ProgressSample:
        return ProgressSample(elapsed_s=s, tps=tps, latency_ms=1.0)

    assert totals.add(0, second(1.0, 10)) == []  # client 1 has not said second 1 yet
    assert totals.add(0, second(2.0, 20)) == []
    ready = totals.add(1, second(1.0, 5))
    assert [(s.elapsed_s, s.tps) for s in ready] == [(1.0, 15)]
    assert totals.add(1, second(2.0, 6))[0].tps == 26
    assert totals.add(1, second(3.0, 7)) == []  # client 0 still runs and has not reached 3
    # Client 0 ends (stopped early): second 3 is client 1's alone, and later ones pass at once.
    assert [s.tps for s in totals.end(0)] == [7]
    assert [s.tps for s in totals.add(1, second(4.0, 8))] == [8]


def test_merged_percentiles_rank_over_every_clients_transactions() -> None:
    # Client a: 1 ms x3, 2 ms x1; client b: 3 ms x4 (buckets in µs). Together 8 transactions:
    # ranks: p50 -> 4th (2 ms), p90/p95/p99 -> 8th (3 ms).
    a = LatencyHistogram(buckets={1000: 3, 2000: 1}, count=4, sum_us=5000, min_us=1000, max_us=2000,
                         skipped=0, failed=1)  # fmt: skip
    b = LatencyHistogram(buckets={3000: 4}, count=4, sum_us=12000, min_us=3000, max_us=3040, skipped=2, failed=0)

    merged = merged_percentiles([a, b], 1.0)

    assert merged.count == 8 and (merged.skipped, merged.failed) == (2, 1)
    assert (merged.p50_ms, merged.p90_ms, merged.p99_ms) == (2.0, 3.0, 3.0)
    assert (merged.min_ms, merged.max_ms) == (1.0, 3.04)
    assert merged.mean_ms == pytest.approx(17000 / 8 / 1000)


def test_no_transactions_give_no_percentiles() -> None:
    empty = LatencyHistogram(buckets={}, count=0, sum_us=0, min_us=None, max_us=None, skipped=0, failed=3)
    merged = merged_percentiles([empty, empty], 0.5)
    assert merged.count == 0 and merged.p50_ms is None and merged.mean_ms is None and merged.failed == 6


def test_the_histogram_output_is_read_bucket_by_bucket() -> None:
    text = "b 950 2\nb 1230 5\nmin 950\nmax 1239\ncount 7\nsum 8000\nskipped 0\nfailed 1\n"
    histogram = parse_histogram_output(text)
    assert histogram.buckets == {950: 2, 1230: 5} and histogram.count == 7 and histogram.failed == 1
    with pytest.raises(Exception, match="incomplete"):
        parse_histogram_output("b 1 1\n")
