"""A comparison's method checks on hand-made groups: a storage comparison that fit in RAM, groups
that differ in durability, checkpoints or state, and short write runs. Pure: no database."""

from typing import Any

from runs.method.comparison_checks import GroupFacts, comparison_checks
from runs.method.facts import MethodFacts
from runs.method.outcome import Status
from runs.tests.method.test_run_checks import GIB, MIB, method, ran

DEVICE = frozenset({"device_id"})
WARM_FRESH = {"cache": "warm", "data": "fresh", "checkpoint_before": True, "settle_s": 5}


def run(
    database_bytes: int = 48 * GIB, mounted: str = "rw", timed: int = 2, requested: int = 0, **keys: Any
) -> MethodFacts:
    """A 20-minute tpcb-like run that recorded everything: by default durable, larger than RAM."""
    environment = {
        "filesystem": {"mount_options": mounted},
        **method(
            database_bytes=database_bytes,
            shared_buffers_bytes=128 * MIB,
            checkpoints={"timed": timed, "requested": requested, "events": []},
            **({"state": WARM_FRESH} | keys),
        ),
    }
    return ran(environment, duration_s=1200)


def checks(groups: dict[str, list[MethodFacts]], varies: frozenset[str] = DEVICE) -> dict[str, Any]:
    found = comparison_checks([GroupFacts(label, runs) for label, runs in groups.items()], varies)
    return {check.key: check for check in found}


def test_like_groups_pass_every_check() -> None:
    found = checks({"ssd": [run(), run()], "hdd": [run(), run()]})

    assert {key: check.status for key, check in found.items()} == {
        "memory": Status.PASSED,
        "durability": Status.PASSED,
        "checkpoints": Status.PASSED,
        "state": Status.PASSED,
        "length": Status.PASSED,
        "stability": Status.PASSED,
    }
    assert found["checkpoints"].reason == (
        "the same checkpoints in every group (a run's mean: ssd 2 timed + 0 requested, hdd 2 timed + 0 requested)"
    )


def test_a_storage_comparison_that_fit_in_ram_warns() -> None:
    found = checks({"ssd": [run(150 * MIB)], "hdd": [run(150 * MIB)]})

    assert found["memory"].status == Status.WARNING
    assert found["memory"].reason == (
        "this compares storage, but 2 groups fit in memory (ssd: fits in RAM; hdd: fits in RAM): "
        "it mostly measured the CPU and the page cache"
    )


def test_a_comparison_of_clients_in_ram_is_not_a_storage_comparison() -> None:
    found = checks({"4 clients": [run(150 * MIB)], "8 clients": [run(150 * MIB)]}, frozenset({"clients"}))

    assert found["memory"].status == Status.PASSED


def test_groups_in_different_tiers_warn() -> None:
    found = checks({"scale 10": [run(150 * MIB)], "scale 3200": [run(48 * GIB)]}, frozenset({"scale"}))

    assert (
        found["memory"].reason == "the groups are in different tiers (scale 10: fits in RAM; scale 3200: exceeds RAM)"
    )


def test_a_group_that_is_not_durable_is_named() -> None:
    found = checks({"barrier=1": [run()], "barrier=0": [run(mounted="rw,barrier=0")]}, frozenset({"mount_options"}))

    assert found["durability"].status == Status.WARNING
    assert found["durability"].reason.startswith("not durable: barrier=0; the others are")


def test_groups_with_different_checkpoints_or_forced_ones_warn() -> None:
    found = checks({"ssd": [run(timed=2), run(timed=2)], "hdd": [run(timed=1), run(timed=1, requested=2)]})

    assert found["checkpoints"].reason == (
        "the groups' windows held different checkpoints (a run's mean: ssd 2 timed + 0 requested, "
        "hdd 1 timed + 1 requested); WAL forced checkpoints in hdd"
    )


def test_groups_from_different_states_warn() -> None:
    cold = {"cache": "cold", "data": "fresh", "checkpoint_before": True, "settle_s": 5}

    found = checks({"ssd": [run()], "hdd": [run(state=cold)]})

    assert (
        found["state"].reason
        == "the groups started from different states (ssd: warm cache, fresh data; hdd: cold cache, fresh data)"
    )


def test_short_write_runs_are_counted() -> None:
    short = ran(method(checkpoints={"timed": 0, "requested": 0}), duration_s=60)

    found = checks({"ssd": [short, run()], "hdd": [run()]})

    assert found["length"].reason.startswith("1 of 3 write runs measured less than 2 × checkpoint_timeout")


def test_one_group_is_no_comparison() -> None:
    found = checks({"ssd": [run()], "hdd": []})

    assert [(key, check.status) for key, check in found.items()] == [("comparison", Status.NOT_APPLICABLE)]


def test_groups_with_unsteady_runs_are_named() -> None:
    groups = [GroupFacts("ssd", [run(), run()], unsteady=1), GroupFacts("hdd", [run()])]

    found = {check.key: check for check in comparison_checks(groups, DEVICE)}

    assert found["stability"].reason == "runs whose tps drifted or dipped with checkpoints: 1 of 2 in ssd"
