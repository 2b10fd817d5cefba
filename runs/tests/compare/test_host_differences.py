"""The host and device as each run found them (issue 32, point 7) in "what differs": a governor
that changed between two groups on one host is named and not explained by the grouping; a
scheduler that differs between two devices is explained by grouping by device."""

from typing import Any

import pytest

from runs.compare.query import ComparisonQuery
from runs.compare.selectors.comparison import compare_runs
from runs.models import Device
from runs.tests.compare.test_comparison import environment, ids, lab, runs_of
from runs.tests.factories import make_device

__all__ = ["lab"]  # a fixture, used by name
pytestmark = pytest.mark.django_db


def with_method(governor: str | None = "performance", boost: bool | None = False, scheduler: str = "none") -> dict:
    """A run's environment with the facts runs.lab.benchmark.method_readings records."""
    host = {"governor": governor, "boost": boost, "smt": True, "thp": "madvise", "swappiness": 60, "numa_nodes": 1}
    return environment() | {"method": {"host": host, "device": {"write_cache": "write back", "scheduler": scheduler}}}


def test_two_groups_on_one_host_that_differ_in_governor_get_a_row_and_a_warning(lab: Any) -> None:
    default = runs_of(lab, [100.0, 102.0], mount_options="", environment=with_method("performance"))
    noatime = runs_of(lab, [110.0, 112.0], mount_options="noatime", environment=with_method("powersave", boost=True))

    result = compare_runs(ComparisonQuery(run_ids=ids(default + noatime)))

    rows = {d.label: d for d in result.differences}
    governor, boost = rows["CPU governor"], rows["CPU boost"]
    assert (governor.kind, governor.cells, governor.explained) == ("environment", ["performance", "powersave"], False)
    assert boost.cells == ["off", "on"] and not boost.explained
    assert "SMT" not in rows and "I/O scheduler" not in rows  # the same for every run: no row
    assert any(warning.startswith("CPU governor differs") for warning in result.warnings), result.warnings


def test_a_scheduler_that_differs_between_devices_grouped_by_device_is_explained(lab: Any) -> None:
    host, _, pg = lab
    hdd = make_device(host, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    ssd_runs = runs_of(lab, [100.0], environment=with_method(scheduler="none"))
    hdd_runs = runs_of((host, hdd, pg), [20.0], environment=with_method(scheduler="mq-deadline"))

    result = compare_runs(ComparisonQuery(run_ids=ids(ssd_runs + hdd_runs), group_by=("device_id",)))

    scheduler = next(d for d in result.differences if d.label == "I/O scheduler")
    assert scheduler.cells == ["none", "mq-deadline"] and scheduler.explained


def test_runs_from_before_these_facts_have_no_row(lab: Any) -> None:
    old = runs_of(lab, [100.0], mount_options="")  # no environment["method"]
    new = runs_of(lab, [110.0], mount_options="noatime", environment=with_method(governor=None))

    result = compare_runs(ComparisonQuery(run_ids=ids(old + new)))

    assert not {"CPU governor", "CPU boost"} & {d.label for d in result.differences}
