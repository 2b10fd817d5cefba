"""pgbench's own options for storage (issue 33): what `pgbench -i` is given (partitions, fillfactor,
unlogged tables, -I steps, foreign keys), --latency-limit, what is refused and with which words,
and the per-second latency read from a real per-transaction log of a rate- and latency-limited run.
"""

import subprocess
from pathlib import Path

import pytest

from runs.lab.errors import InvalidOption, LabError
from runs.lab.parse.pgbench_summary import parse_init_done, parse_summary
from runs.lab.pgbench import latency_seconds
from runs.lab.pgbench.commands import Connection, InitOptions, RunOptions, init_command, run_command

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pgbench15"
LIMITED = FIXTURES / "rate_latency_limit"  # -c 2 -j 1 -T 3 -R 600 --latency-limit=2, per-transaction log
CONNECTION = Connection(host="/tmp/s", port=5432)


def init_args(**options: object) -> list[str]:
    argv = init_command("/bin", CONNECTION, InitOptions(scale=10, **options))  # type: ignore[arg-type]
    return argv[4 : argv.index("-h")]  # between "-s 10" and the connection


def test_it_keeps_the_command_of_a_run_that_sets_none_of_them() -> None:
    assert init_command("/bin", CONNECTION, InitOptions(scale=10)) == [
        "/bin/pgbench", "-i", "-s", "10", "-h", "/tmp/s", "-p", "5432", "-U", "postgres", "bench",
    ]  # fmt: skip
    assert not [word for word in run_command("/bin", CONNECTION, RunOptions(), "/r") if "latency-limit" in word]


@pytest.mark.parametrize(
    "options, args",
    [
        ({"partitions": 4}, ["--partitions=4"]),
        ({"partitions": 4, "partition_method": "hash"}, ["--partitions=4", "--partition-method=hash"]),
        ({"fillfactor": 80}, ["--fillfactor=80"]),
        ({"unlogged_tables": True}, ["--unlogged-tables"]),
        ({"foreign_keys": True}, ["--foreign-keys"]),
        ({"init_steps": "dtGvp"}, ["--init-steps=dtGvp"]),
        # f among the steps says it: pgbench would add it again at the end otherwise.
        ({"init_steps": "dtgpf", "foreign_keys": True}, ["--init-steps=dtgpf"]),
    ],
)
def test_it_gives_pgbench_init_each_option(options: dict[str, object], args: list[str]) -> None:
    assert init_args(**options) == args


def test_it_gives_the_latency_limit_to_the_measurement_with_or_without_a_rate() -> None:
    limited = run_command("/bin", CONNECTION, RunOptions(rate_tps=600, latency_limit_ms=2.5), "/r")
    alone = run_command("/bin", CONNECTION, RunOptions(latency_limit_ms=10), "/r")

    assert limited[limited.index("-R") : limited.index("-R") + 3] == ["-R", "600", "--latency-limit=2.5"]
    assert "--latency-limit=10" in alone and "-R" not in alone  # late counted, nothing skipped


@pytest.mark.parametrize(
    "options, message",
    [
        ({"partitions": 1001}, "partitions must be between 0 (none) and 1000; got 1001"),
        ({"partitions": -1}, "partitions must be between 0 (none) and 1000; got -1"),
        ({"partition_method": "hash"}, "a partition method (hash) needs partitions: set partitions from 1 to 1000"),
        ({"partitions": 2, "partition_method": "list"}, "must be one of range, hash; got 'list'"),
        ({"fillfactor": 9}, "fillfactor must be between 10 and 100 (%); got 9"),
        ({"fillfactor": 101}, "fillfactor must be between 10 and 100 (%); got 101"),
        ({"init_steps": "dtgxvp"}, "'x' is not a pgbench step; use the letters dtgGvpf in order"),
        ({"init_steps": "dtgvpp"}, "p is given twice; give each step once"),
        ({"init_steps": "dtgGvp"}, "choose g (client-side) or G (server-side) generation, not both"),
        ({"init_steps": "dvp"}, "lack t (create tables): the run measures loaded tables"),
        ({"init_steps": "dtvp"}, "lack g (generate client-side) or G (generate server-side)"),
        ({"init_steps": "tdgvp"}, "d (drop) must come before t (create tables)"),
        ({"init_steps": "dgtvp"}, "t (create tables) must come before g (generate client-side)"),
        ({"init_steps": "dtgfp", "foreign_keys": True}, "p (primary keys) must come before f (foreign keys)"),
        ({"init_steps": "dtgvf", "foreign_keys": True}, "f (foreign keys) needs p (primary keys) before it"),
        ({"init_steps": "dtgvpf"}, "include f (foreign keys): tick foreign keys too, or leave f out"),
        ({"init_steps": "dtgvp", "foreign_keys": True}, "add f after p to the initialisation steps 'dtgvp'"),
    ],
)
def test_it_refuses_what_pgbench_init_cannot_load_saying_what_is_allowed(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidOption) as refused:
        init_command("/bin", CONNECTION, InitOptions(scale=10, **options))  # type: ignore[arg-type]
    assert message in str(refused.value)


def test_keys_before_the_data_are_a_load_worth_measuring() -> None:
    assert init_args(init_steps="dtpG") == ["--init-steps=dtpG"]


@pytest.mark.parametrize("limit", [0, 0.05, 600_001, -5])
def test_it_refuses_a_latency_limit_out_of_range(limit: float) -> None:
    with pytest.raises(InvalidOption, match=r"the latency limit must be between 0\.1 and 600000 ms; got "):
        RunOptions(latency_limit_ms=limit).validate()


def test_it_reads_the_partitions_late_and_skipped_of_a_real_limited_run() -> None:
    summary = parse_summary((LIMITED / "run.stdout.txt").read_text(), (LIMITED / "run.stderr.txt").read_text())

    assert (summary.partition_method, summary.partitions) == ("hash", 4)
    assert (summary.skipped, summary.skipped_pct) == (38, 2.036)
    assert (summary.latency_limit_ms, summary.above_latency_limit, summary.above_latency_limit_pct) == (2.0, 114, 6.236)
    assert summary.transactions_processed == 1828


def test_it_reads_the_steps_of_a_partitioned_unlogged_init_with_foreign_keys() -> None:
    done = parse_init_done((FIXTURES / "init_partitioned.stderr.txt").read_text())

    assert done is not None and [name for name, _ in done.steps] == [
        "drop tables", "create tables", "server-side generate", "vacuum", "primary keys", "foreign keys",
    ]  # fmt: skip
    assert "creating 4 partitions..." in (FIXTURES / "init_partitioned.stderr.txt").read_text()


def per_second(limit_us: int) -> list[latency_seconds.LatencySecond]:
    """The host's script run here, on the captured log (sh and awk, as on a lab host)."""
    argv = ["sh", "-c", latency_seconds._SCRIPT, "sh", str(LIMITED), str(LIMITED / "pgbench_log.started")]
    done = subprocess.run([*argv, str(limit_us), "pgbench_log"], capture_output=True, text=True, check=True)
    return latency_seconds.parse_latency_seconds(done.stdout)


def test_each_seconds_late_and_skipped_add_up_to_pgbenchs_own_counts() -> None:
    seconds = per_second(2000)

    # pgbench's summary of the same run: 1828 completed, 114 above the 2.0 ms limit, 38 skipped.
    assert sum(s.completed for s in seconds) == 1828
    assert sum(s.late for s in seconds) == 114 and sum(s.skipped for s in seconds) == 38
    assert [s.second for s in seconds] == [1, 2, 3, 4]  # the last 10 ended just after 3 s
    # Hand-checked on the log (sort -n of second 2's 597 latencies: ranks 299, 568, 592, 597).
    assert (seconds[1].completed, seconds[1].p50_ms, seconds[1].p95_ms, seconds[1].p99_ms) == (597, 0.686, 1.364, 1.872)
    assert seconds[1].max_ms == 4.67 and seconds[1].late == 4 and seconds[1].skipped == 0
    assert all(s.p50_ms <= s.p95_ms <= s.p99_ms <= s.max_ms for s in seconds)  # type: ignore[operator]


def test_without_a_limit_nothing_is_late() -> None:
    assert sum(s.late for s in per_second(0)) == 0


def test_a_line_the_script_does_not_write_is_an_error_not_a_guess() -> None:
    with pytest.raises(LabError, match="has a line it should not"):
        latency_seconds.parse_latency_seconds("s 1 2 3\n")
    quiet = latency_seconds.parse_latency_seconds("s 5 0 -1 -1 -1 -1 7 0\n")
    assert quiet[0].p50_ms is None and quiet[0].skipped == 7
