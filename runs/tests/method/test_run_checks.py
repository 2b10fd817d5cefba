"""Each method check on hand-made runs: one that passes and one that warns, with the figures that
decide it in the reason. Pure: no database, no host."""

from typing import Any

import pytest

from runs.bench.specs import RunSpec
from runs.compare.stats import trend
from runs.method.facts import MethodFacts, recorded_facts, spec_facts
from runs.method.outcome import Status
from runs.method.run_checks import (
    check_checkpoints,
    check_contention,
    check_durability,
    check_host,
    check_length,
    check_memory,
    check_seed,
    check_stability,
    check_state,
    run_checks,
)
from runs.method.tiers import EXCEEDS_RAM, FITS_RAM, FITS_SHARED_BUFFERS, TIERS, memory_tier
from runs.models import Run

MIB, GIB = 2**20, 2**30


def spec(**fields: Any) -> RunSpec:
    defaults: dict[str, Any] = {"server_host_id": 1, "device_id": 1, "filesystem": "ext4", "pg_install_id": 1}
    return RunSpec(**(defaults | fields))


def ran(environment: dict[str, Any] | None = None, metrics: dict[str, Any] | None = None, **fields: Any) -> MethodFacts:
    """A run that ran `spec(**fields)` and recorded `environment` (a host with 24 GiB by default)."""
    recorded = {"host": {"memory_bytes": 24 * GIB}, **(environment or {})}
    return recorded_facts(spec(**fields), recorded, metrics or {})


def method(**keys: Any) -> dict[str, Any]:
    return {"method": keys}


# --- memory tier ---


@pytest.mark.parametrize(
    ("database_bytes", "tier"),
    [
        (100 * MIB, FITS_SHARED_BUFFERS),
        (128 * MIB, FITS_SHARED_BUFFERS),
        (129 * MIB, FITS_RAM),
        (25 * GIB, EXCEEDS_RAM),
    ],
)
def test_the_tier_is_read_against_shared_buffers_and_ram(database_bytes: int, tier: str) -> None:
    facts = ran(method(database_bytes=database_bytes, shared_buffers_bytes=128 * MIB))

    assert memory_tier(facts) == tier


def test_a_database_in_ram_warns_that_reads_come_from_memory() -> None:
    check = check_memory(ran(method(database_bytes=150 * MIB, shared_buffers_bytes=128 * MIB)))

    assert check.status == Status.WARNING
    assert check.reason == (
        "fits in RAM: database 150 MiB, shared_buffers 128 MiB, RAM 24 GiB: reads come from memory, not the device"
    )
    assert "exceeds the host's RAM" in check.advice


def test_a_database_larger_than_ram_passes() -> None:
    check = check_memory(ran(method(database_bytes=48 * GIB, shared_buffers_bytes=128 * MIB)))

    assert (check.status, check.reason) == (
        Status.PASSED,
        "exceeds RAM: database 48 GiB, shared_buffers 128 MiB, RAM 24 GiB",
    )


def test_before_a_run_the_tier_is_estimated_from_the_scale_and_the_settings() -> None:
    # scale 100 = 1500 MiB; shared_buffers from the run's own settings
    facts = spec_facts(spec(scale=100, pg_settings="shared_buffers = 2GB"), memory_bytes=24 * GIB)

    check = check_memory(facts)

    assert check.reason == (
        "fits in shared buffers: database 1.46 GiB, shared_buffers 2 GiB, RAM 24 GiB (estimated from the scale): "
        "reads come from memory, not the device"
    )


def test_without_the_hosts_ram_the_tier_is_not_recorded() -> None:
    check = check_memory(spec_facts(spec(scale=1), memory_bytes=None))

    assert check.status == Status.NOT_RECORDED


def test_a_database_per_client_host_counts_every_database() -> None:
    facts = spec_facts(spec(scale=10, client_host_ids=(2, 3)), memory_bytes=24 * GIB)

    assert facts.database_bytes == 2 * 10 * 15 * MIB


# --- contention ---


def test_fewer_branch_rows_than_clients_warn_for_tpcb_like() -> None:
    check = check_contention(spec_facts(spec(scale=4, clients=10), 24 * GIB))

    assert check.status == Status.WARNING
    assert check.reason.startswith("10 clients share scale 4's 4 branch rows")
    assert check.advice == "raise the scale to at least 10, or use fewer clients"


def test_clients_of_several_hosts_on_one_database_all_contend() -> None:
    facts = spec_facts(spec(scale=10, clients=4, client_host_ids=(2, 3, 4), shared_database=True), 24 * GIB)

    assert check_contention(facts).status == Status.WARNING  # 12 clients on 10 rows


@pytest.mark.parametrize(("workload", "status"), [("tpcb-like", Status.PASSED), ("select-only", Status.NOT_APPLICABLE)])
def test_enough_rows_or_a_read_only_workload_pass(workload: str, status: Status) -> None:
    assert check_contention(spec_facts(spec(scale=10, clients=10, workload=workload), 24 * GIB)).status == status


# --- run length and checkpoints ---


def test_a_write_run_shorter_than_two_checkpoint_timeouts_warns() -> None:
    check = check_length(spec_facts(spec(duration_s=300), 24 * GIB))  # checkpoint_timeout 5min by default

    assert check.status == Status.WARNING
    assert check.reason.startswith("300 s measured, shorter than 2 × checkpoint_timeout (300 s)")
    assert check.advice == "measure at least 600 s, or lower checkpoint_timeout to 150 s or less"


def test_a_run_too_short_for_any_checkpoint_timeout_is_told_to_measure_longer() -> None:
    # PostgreSQL takes no checkpoint_timeout below 30 s: half of 40 s cannot be advised.
    assert check_length(spec_facts(spec(duration_s=40), 24 * GIB)).advice == "measure at least 600 s"


def test_a_run_two_checkpoint_timeouts_long_passes_and_reads_its_own_setting() -> None:
    check = check_length(spec_facts(spec(duration_s=60, pg_settings="checkpoint_timeout = 30s"), 24 * GIB))

    assert (check.status, check.reason) == (Status.PASSED, "60 s ≥ 2 × 30 s")


def test_the_servers_own_checkpoint_timeout_wins_over_the_request() -> None:
    environment = {"postgresql": {"non_default_settings": {"checkpoint_timeout": "30"}}}

    assert ran(environment, duration_s=60).checkpoint_timeout_s == 30


def test_a_read_only_run_has_no_length_to_check() -> None:
    assert check_length(spec_facts(spec(workload="select-only", duration_s=10), 24 * GIB)).status == (
        Status.NOT_APPLICABLE
    )


def test_requested_checkpoints_are_called_out() -> None:
    facts = ran(method(checkpoints={"timed": 1, "requested": 3, "events": []}), pg_settings="max_wal_size = 64MB")

    check = check_checkpoints(facts)

    assert check.status == Status.WARNING
    assert check.reason == "1 timed and 3 requested during the window: WAL filled max_wal_size (64MB) and forced them"


def test_old_runs_counted_checkpoints_in_their_pg_stats() -> None:
    facts = ran(metrics={"pg_stats": {"checkpoints_timed": 2, "checkpoints_requested": 0}})

    assert check_checkpoints(facts).reason == "2 timed and 0 requested during the window"


def test_a_run_that_recorded_no_counts_says_so() -> None:
    assert check_checkpoints(ran()).status == Status.NOT_RECORDED


# --- durability ---


def test_a_durable_run_passes() -> None:
    assert check_durability(ran(method(device={"write_cache": "write back"}))).status == Status.PASSED


def test_fsync_off_as_the_server_reports_it_is_not_durable() -> None:
    facts = ran({"postgresql": {"non_default_settings": {"fsync": "off", "synchronous_commit": "off"}}})

    check = check_durability(facts)

    assert check.status == Status.WARNING
    assert check.reason == "not durable: fsync = off; synchronous_commit = off"
    assert check.advice == (
        "turn fsync and synchronous_commit on, or compare it only with runs that are not durable either, and say so"
    )


def test_barrier_0_on_a_write_back_cache_is_not_durable() -> None:
    environment = {
        "filesystem": {"mount_options": "rw,relatime,barrier=0"},
        **method(device={"write_cache": "write back"}),
    }

    check = check_durability(ran(environment))

    assert check.reason == (
        "not durable: mounted with barrier=0; the device's write cache is volatile (write back) and nothing flushes it"
    )


def test_unlogged_tables_are_not_durable() -> None:
    check = check_durability(ran(unlogged_tables=True))

    assert check.status == Status.WARNING
    assert check.reason == "not durable: the tables are unlogged (pgbench -i --unlogged-tables): a crash empties them"
    assert check.advice == "load logged tables, or compare it only with runs that are not durable either, and say so"


def test_the_mount_options_as_mounted_win_over_the_request() -> None:
    facts = ran({"filesystem": {"mount_options": "rw,relatime"}}, mount_options="nobarrier")

    assert check_durability(facts).status == Status.PASSED


# --- state, seed, host ---


def test_a_run_measured_without_a_checkpoint_first_warns() -> None:
    facts = ran(method(state={"cache": "warm", "data": "fresh", "checkpoint_before": False, "settle_s": 0}))

    assert check_state(facts).status == Status.WARNING


def test_the_state_and_seed_pass_when_recorded() -> None:
    facts = ran(
        method(state={"cache": "cold", "data": "frozen", "checkpoint_before": True, "settle_s": 5}, random_seed=42)
    )

    assert (
        check_state(facts).reason
        == "cold cache, frozen data; CHECKPOINT and up to 5 s for a quiet device before measuring"
    )
    assert check_seed(facts).reason == "--random-seed=42: Run again repeats it"


def test_a_powersave_governor_boost_and_a_busy_host_are_named() -> None:
    during = {
        "load_1m_start": 3.5,
        "load_1m_end": 3.0,
        "cpu_count": 4,
        "busiest": [{"pid": 812, "command": "backup", "cpu_pct": 85.0}, {"pid": 9, "command": "idle", "cpu_pct": 1}],
    }
    facts = ran(method(host={"governor": "powersave", "boost": True}, during=during))

    check = check_host(facts)

    assert check.status == Status.WARNING
    assert check.reason == (
        "CPU frequency governor powersave; CPU boost (turbo) on: the clock follows temperature; "
        "load average 3.5 on 4 CPUs before the window; backup (PID 812) took 85 % CPU"
    )


def test_a_quiet_host_with_the_performance_governor_passes() -> None:
    facts = ran(method(host={"governor": "performance", "boost": False}, during={"load_1m_start": 0.2, "cpu_count": 2}))

    assert check_host(facts).status == Status.PASSED


def test_a_busy_client_host_is_named_and_a_quiet_one_is_not() -> None:
    quiet = {"load_1m_start": 0.1, "cpu_count": 2, "busiest": [{"pid": 5, "command": "cron", "cpu_pct": 19.9}]}
    busy = {"load_1m_start": 1.5, "cpu_count": 2, "busiest": [{"pid": 77, "command": "yes", "cpu_pct": 99.0}]}
    facts = ran(method(host={"governor": "performance"}, during=quiet, during_clients={"lab3": busy, "lab2": quiet}))

    check = check_host(facts)

    assert check.status == Status.WARNING
    # 1.5 > half of 2 CPUs; 19.9 % is under a fifth of a CPU.
    assert check.reason == (
        "client host lab3: load average 1.5 on 2 CPUs before the window; client host lab3: yes (PID 77) took 99 % CPU"
    )


def test_quiet_client_hosts_pass_and_say_so() -> None:
    quiet = {"load_1m_start": 0.1, "cpu_count": 2, "busiest": []}
    facts = ran(method(during=quiet, during_clients={"lab2": quiet}))

    check = check_host(facts)

    assert (check.status, check.reason) == (
        Status.PASSED,
        "no powersave governor, no boost, nothing else busy on the server or its client hosts",
    )
    assert (
        check_host(ran(method(during_clients={"lab2": quiet}))).status == Status.PASSED
    )  # recorded: not "not recorded"


# --- stability ---


def test_a_steady_fall_of_tps_is_flagged() -> None:
    falling = [(float(s), 1000.0 - 10 * s) for s in range(30)]  # 1000 -> 710, mean 855: a 34 % fall

    check = check_stability(ran(), falling)

    assert (check.status, check.reason) == (Status.WARNING, "tps fell steadily by 34% over the window")


def test_an_unsteady_run_names_what_else_was_busy() -> None:
    falling = [(float(s), 1000.0 - 10 * s) for s in range(30)]
    busy = {"load_1m_start": 0.2, "cpu_count": 2, "busiest": [{"pid": 77, "command": "yes", "cpu_pct": 99.0}]}

    check = check_stability(ran(method(during_clients={"lab2": busy})), falling)

    assert check.reason == (
        "tps fell steadily by 34% over the window (meanwhile client host lab2: yes (PID 77) took 99 % CPU)"
    )


def test_noise_without_a_trend_passes() -> None:
    noisy = [(float(s), 1000.0 + (50 if s % 2 else -50)) for s in range(30)]

    assert check_stability(ran(), noisy).status == Status.PASSED


def test_tps_that_dips_during_checkpoints_is_flagged() -> None:
    events = [{"second": 10.0, "kind": "time", "duration_s": 4.0}]
    samples = [(float(s), 400.0 if 10 <= s <= 14 else 1000.0) for s in range(30)]

    check = check_stability(ran(method(checkpoints={"timed": 1, "requested": 0, "events": events})), samples)

    assert check.reason == "tps during checkpoints was 40% of the rest"


def test_the_trend_is_a_least_squares_line() -> None:
    # Hand-checked: slope -1 over x 0..4 is a fall of 4 on a mean of 8; a flat fit has p = 1.
    falling = trend([0, 1, 2, 3, 4], [10, 9, 8, 7, 6])
    flat = trend([0, 1, 2, 3, 4], [1, 3, 2, 3, 1])

    assert falling is not None and falling.change == pytest.approx(-0.5) and falling.p < 1e-6
    assert flat is not None and flat.change == pytest.approx(0) and flat.p == pytest.approx(1)
    assert trend([0, 1], [1, 2]) is None


# --- all together ---


def test_an_accepted_warning_keeps_its_status_and_carries_the_reason() -> None:
    facts = ran(method(database_bytes=150 * MIB, shared_buffers_bytes=128 * MIB))

    accepted = {"memory": {"reason": "a CPU-bound study on purpose", "by": "otto"}}
    checks = {check.key: check for check in run_checks(facts, accepted=accepted)}

    assert checks["memory"].status == Status.WARNING and not checks["memory"].warns
    assert (checks["memory"].accepted, checks["memory"].accepted_by) == ("a CPU-bound study on purpose", "otto")
    assert [check.key for check in run_checks(facts)] == [
        "memory",
        "contention",
        "length",
        "checkpoints",
        "durability",
        "state",
        "seed",
        "host",
        "stability",
    ]


def test_every_tier_fits_its_column() -> None:
    assert max(len(tier) for tier in TIERS) <= Run._meta.get_field("memory_tier").max_length  # type: ignore[operator]


def test_before_a_run_the_declared_state_and_seed_are_checked() -> None:
    facts = spec_facts(spec(checkpoint_before=False, cache_state="cold", random_seed=7), 24 * GIB)

    assert check_state(facts).status == Status.WARNING
    assert check_state(facts).reason.startswith("cold cache, reused data (as asked); no CHECKPOINT before measuring")
    assert check_seed(facts).reason == "--random-seed=7: Run again repeats it"
    assert check_seed(spec_facts(spec(), 24 * GIB)).reason == "benchlab picks one when the run is queued"
