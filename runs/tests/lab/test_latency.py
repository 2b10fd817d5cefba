"""Latency percentiles computed on the host (awk and sort) from pgbench's per-transaction logs,
checked against nearest-rank percentiles computed here in Python."""

import math
import random
from fractions import Fraction
from pathlib import Path

import pytest

from runs.lab.errors import LabError
from runs.lab.pgbench.latency import parse_percentile_output, transaction_latency_percentiles
from runs.lab.transport.local import LocalTransport

START = 1_795_321_405.25  # pgbench's start, epoch seconds


def nearest_rank(values: list[int], per_mille: int) -> float:
    ordered = sorted(values)
    rank = max(1, math.ceil(Fraction(per_mille, 1000) * len(ordered)))
    return ordered[rank - 1] / 1000


def log_line(client: int, number: int, latency: str, end: float) -> str:
    seconds = int(end)
    return f"{client} {number} {latency} 0 {seconds} {round((end - seconds) * 1_000_000)}\n"


@pytest.fixture
def run_dir(run_user_dir: Path) -> Path:
    """A work dir like a run's: the unprivileged user's, who computes the percentiles there."""
    (run_user_dir / "pgbench.started").write_text(f"{START:.9f}\n")
    return run_user_dir


def test_percentiles_match_nearest_rank_and_leave_out_the_warmup(run_dir: Path) -> None:
    rng = random.Random(7)  # noqa: S311 - test data, not secrets
    measured: list[int] = []
    files = {0: "pgbench_log.4242", 1: "pgbench_log.4242.1"}  # one file per thread
    lines: dict[int, list[str]] = {0: [], 1: []}
    for number in range(5000):
        client = number % 2
        end = START + rng.uniform(0.0, 20.0)
        latency = int(rng.lognormvariate(7, 0.8))  # µs, a long right tail like real latencies
        if end > START + 5:
            measured.append(latency)
        lines[client].append(log_line(client, number, str(latency), end))
    # Transactions that never completed are counted, not ranked; in the warm-up they are left out too.
    lines[0] += [log_line(0, 9001, "skipped", START + 10), log_line(0, 9002, "skipped", START + 11)]
    lines[1] += [log_line(1, 9003, "failed", START + 12), log_line(1, 9004, "failed", START + 1)]
    for thread, name in files.items():
        (run_dir / name).write_text("".join(lines[thread]))

    result = transaction_latency_percentiles(
        LocalTransport(), str(run_dir), str(run_dir / "pgbench.started"), warmup_s=5, sampling_rate=0.5
    )

    assert result.count == len(measured)
    assert (result.skipped, result.failed, result.sampling_rate) == (2, 1, 0.5)
    assert result.min_ms == min(measured) / 1000 and result.max_ms == max(measured) / 1000
    assert result.mean_ms == pytest.approx(sum(measured) / len(measured) / 1000)
    expected = [nearest_rank(measured, pm) for pm in (500, 900, 950, 990, 999)]
    assert [result.p50_ms, result.p90_ms, result.p95_ms, result.p99_ms, result.p999_ms] == expected
    assert sorted(path.name for path in run_dir.iterdir()) == ["pgbench.started", *sorted(files.values())]


def test_a_single_transaction_is_every_percentile(run_dir: Path) -> None:
    (run_dir / "pgbench_log.1").write_text(log_line(0, 0, "1234", START + 2))

    result = transaction_latency_percentiles(LocalTransport(), str(run_dir), "pgbench.started", 0, 1.0)

    assert result.count == 1
    assert {result.min_ms, result.p50_ms, result.p999_ms, result.max_ms} == {1.234}


def test_a_log_with_nothing_measured_has_no_percentiles(run_dir: Path) -> None:
    (run_dir / "pgbench_log.1").write_text(log_line(0, 0, "900", START + 1))

    result = transaction_latency_percentiles(LocalTransport(), str(run_dir), "pgbench.started", 3, 1.0)

    assert result.count == 0
    assert result.p50_ms is None and result.mean_ms is None and result.max_ms is None


def test_an_incomplete_summary_is_an_error() -> None:
    with pytest.raises(LabError, match="incomplete"):
        parse_percentile_output("min 3\npm500 4\n", 1.0)
