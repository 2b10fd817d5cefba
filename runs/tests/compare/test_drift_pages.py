"""Drift over runs in the database: a host's and a device's changes from the runs' recorded
environments, the comparison's warning when compared runs span a change (in one query), the
host page, and the facts a run probes surviving a failed probe. The issue's "a changed kernel
fact is flagged": two runs on different kernels, flagged on the host page and their comparison."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.bench.services.drift_facts import drift_facts
from runs.compare.query import ComparisonQuery
from runs.compare.selectors.comparison import compare_runs, comparison_data
from runs.compare.selectors.drift import _edges, comparison_drift, device_drift, drift_among, host_drift
from runs.lab.transport.interface import CommandResult
from runs.models import Device, Host, PgInstall, Run, RunState
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
PG_BIN = "/usr/lib/postgresql/15/bin"


def recorded(
    kernel: str = "6.1.0-25-amd64", firmware: str | None = "RVT04B6Q", configure: str | None = "'--with-openssl'"
) -> dict[str, Any]:
    """An environment as a run records it now (runs/bench/services/results.py with the drift facts)."""
    return {
        "host": {"name": "lab1", "kernel": kernel, "distribution": "Debian GNU/Linux 12 (bookworm)",
                 "cpu_model": "Xeon", "cpu_cores": 2, "memory_bytes": 25769803776},
        "device": {"name": "ssd0", "model": "TEST SSD", "probed": {
            "model": "Samsung SSD 860", "serial": "S3Z1", "firmware": firmware, "size_bytes": 500107862016}},
        "filesystem": {"mount_options": "rw,relatime"},
        "postgresql": {"version": "PostgreSQL 15.19 (Debian 15.19-0+deb12u1) on x86_64-pc-linux-gnu",
                       "bin_dir": PG_BIN, "block_size": 8192, "wal_block_size": 8192, "configure": configure,
                       "non_default_settings": {}},
        "pgbench": {"version": "pgbench (PostgreSQL) 15.19", "host": "lab1"},
    }  # fmt: skip


def before_this_feature(kernel: str = "6.1.0-25-amd64") -> dict[str, Any]:
    """What a run recorded before drift: no probed device, no configure options."""
    env = recorded(kernel)
    del env["device"]["probed"], env["postgresql"]["configure"]
    return env


@pytest.fixture
def lab() -> tuple[Host, Device, PgInstall]:
    host = make_host()
    return host, make_device(host), make_pg_install(host, bin_dir=PG_BIN)


def ran(lab: tuple[Host, Device, PgInstall], day: int, environment: dict[str, Any], **fields: Any) -> Run:
    at = START + timedelta(days=day)
    return make_run(*lab, started_at=at, finished_at=at + timedelta(minutes=5), environment=environment, **fields)


def test_a_changed_kernel_is_found_between_two_runs(lab: Any) -> None:
    old, new = ran(lab, 2, recorded("6.1.0-25-amd64")), ran(lab, 8, recorded("6.1.0-26-amd64"))
    ran(lab, 5, {}, state=RunState.FAILED)  # failed before it recorded anything: says nothing
    [change] = host_drift(lab[0]).changes
    assert (change.fact, change.old, change.new) == ("kernel", "6.1.0-25-amd64", "6.1.0-26-amd64")
    assert (change.before.run_id, change.after.run_id) == (old.pk, new.pk)
    assert device_drift(lab[1]).changes == []


def test_older_runs_that_recorded_less_are_not_recorded_not_changed(lab: Any) -> None:
    ran(lab, 1, before_this_feature())
    ran(lab, 2, before_this_feature())
    first = ran(lab, 3, recorded())
    ran(lab, 4, recorded())
    host, device = host_drift(lab[0]), device_drift(lab[1])
    assert host.changes == [] and device.changes == []
    assert [(n.fact, n.since.run_id, n.earlier) for n in host.not_recorded] == [
        (f"configure options ({PG_BIN})", first.pk, 2)
    ]
    assert {n.fact for n in device.not_recorded} == {"model", "serial", "firmware", "size"}


def test_a_firmware_update_is_a_device_change_and_a_client_hosts_kernel_counts_for_it(lab: Any) -> None:
    ran(lab, 1, recorded(firmware="RVT04B6Q"))
    ran(lab, 2, recorded(firmware="RVT05B6Q"))
    [change] = device_drift(lab[1]).changes
    assert (change.fact, change.old, change.new) == ("firmware", "RVT04B6Q", "RVT05B6Q")
    # lab2 ran pgbench for lab1's runs: what the runs recorded of their client is lab2's history.
    client = make_host(name="lab2", address="10.200.0.12")
    for day, kernel in ((3, "6.1.0-25-amd64"), (4, "6.1.0-27-amd64")):
        ran(lab, day, recorded() | {"client": {"name": "lab2", "kernel": kernel}}, client_host=client)
    [client_change] = host_drift(client).changes
    assert (client_change.old, client_change.new) == ("6.1.0-25-amd64", "6.1.0-27-amd64")
    # With several client hosts each one's facts are recorded by name: lab3's second place counts.
    lab3 = make_host(name="lab3", address="10.200.0.13")
    for day, kernel in ((5, "6.1.0-25-amd64"), (6, "6.1.0-28-amd64")):
        clients = [{"name": "lab2", "kernel": "6.1.0-27-amd64"}, {"name": "lab3", "kernel": kernel}]
        ran(lab, day, recorded() | {"clients": clients}, client_hosts=[client, lab3])
    [lab3_change] = host_drift(lab3).changes
    assert (lab3_change.old, lab3_change.new) == ("6.1.0-25-amd64", "6.1.0-28-amd64")
    assert host_drift(client).changes == [client_change]  # lab2 itself did not change again


def test_a_comparison_spanning_a_kernel_change_warns_it_in_three_queries(lab: Any) -> None:
    before = [ran(lab, day, recorded("6.1.0-25-amd64"), clients=2) for day in (2, 3)]
    between = ran(lab, 5, recorded("6.1.0-25-amd64"))  # not compared: still narrows the change down
    after = [ran(lab, day, recorded("6.1.0-26-amd64"), clients=8) for day in (8, 9)]
    compared = Run.objects.select_related("device__host", "server_host").prefetch_related("run_clients__host")
    compared = compared.filter(pk__in=[r.pk for r in before + after])
    runs = list(compared)
    with CaptureQueriesContext(connection) as queries:
        [spanned] = comparison_drift(runs)
    # Whether anything differs at all, then the runs' recorded facts and which hosts were their clients.
    assert len(queries) == 3
    assert spanned.said() == (
        f"lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64 between run {between.pk} (6 Nov 2026) and "
        f"run {after[0].pk} (9 Nov 2026); compared runs on both sides (2 before, 2 after)"
    )
    result = compare_runs(ComparisonQuery(run_ids=tuple(r.pk for r in before + after)))
    assert [s.said() for s in result.drift] == [spanned.said()]
    assert comparison_data(result)["drift"] == [spanned.said()]
    # Runs all on one side of it span nothing: one query says nothing differs among them.
    with CaptureQueriesContext(connection) as queries:
        assert comparison_drift([r for r in runs if r.pk in {a.pk for a in after}]) == []
    assert len(queries) == 1


def test_a_comparison_warning_never_shows_a_serial_or_an_installs_path(lab: Any) -> None:
    first = ran(lab, 1, recorded(configure="'--prefix=/opt/a'"))
    env = recorded(configure="'--prefix=/opt/b'")
    env["device"]["probed"]["serial"] = "S4NEW"
    second = ran(lab, 2, env)
    said = [s.said() for s in comparison_drift(list(Run.objects.filter(pk__in=[first.pk, second.pk])))]
    assert sorted(said) == [
        f"lab1: configure options changed between run {first.pk} (2 Nov 2026) and run {second.pk} (3 Nov 2026); "
        "compared runs on both sides (1 before, 1 after)",
        f"lab1:ssd0: serial changed between run {first.pk} (2 Nov 2026) and run {second.pk} (3 Nov 2026); "
        "compared runs on both sides (1 before, 1 after)",
    ]


def test_the_changed_kernel_is_flagged_on_the_host_page_and_on_the_comparison(
    lab: Any, client_for: ClientFactory
) -> None:
    old, new = ran(lab, 2, recorded("6.1.0-25-amd64")), ran(lab, 8, recorded("6.1.0-26-amd64"))
    viewer = client_for("vera")

    page = viewer.get(reverse("host-detail", args=[lab[0].pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="drift-badge"' in html and "changed 9 Nov 2026: lab1 kernel" in html
    assert 'id="drift-warning"' in html and "{#" not in html
    assert "6.1.0-25-amd64" in html and "6.1.0-26-amd64" in html
    assert f'href="/runs/{old.pk}/">run {old.pk}</a>' in html and f'href="/runs/{new.pk}/">run {new.pk}</a>' in html

    compared = viewer.get(reverse("compare"), {"runs": f"{old.pk},{new.pk}"})
    html = compared.content.decode()
    assert 'id="drift-banner"' in html and 'id="drift-warnings"' in html and "{#" not in html
    assert "lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64" in html


def test_the_host_page_without_changes_and_its_refusals(lab: Any, client_for: ClientFactory) -> None:
    ran(lab, 1, before_this_feature())
    ran(lab, 2, recorded())
    viewer = client_for("vera")
    html = viewer.get(reverse("host-detail", args=[lab[0].pk])).content.decode()
    assert "No change seen between its runs." in html and 'id="drift-badge"' not in html
    assert "not recorded before" in html
    assert viewer.get("/hosts/999999/").status_code == 404
    assert client_for("nora").get(reverse("host-detail", args=[lab[0].pk])).status_code == 403  # no role
    assert client_for(None).get(reverse("host-detail", args=[lab[0].pk])).status_code == 302  # to log in


def test_a_failed_probe_records_nothing_and_fails_nothing(lab: Any) -> None:
    class Broken:
        label = "lab1"

        def run(self, argv: list[str], **kwargs: Any) -> CommandResult:
            raise OSError("connection lost")

    run = ran(lab, 1, {})
    assert drift_facts(Broken(), run) == {}  # type: ignore[arg-type]


def test_a_firmware_that_differs_between_groups_is_in_what_differs(lab: Any) -> None:
    old = [ran(lab, day, recorded(firmware="RVT04B6Q"), clients=2) for day in (1, 2)]
    new = [ran(lab, day, recorded(firmware="RVT05B6Q"), clients=8) for day in (3, 4)]
    result = compare_runs(ComparisonQuery(run_ids=tuple(r.pk for r in old + new)))
    firmware = next(d for d in result.differences if d.label == "device firmware")
    assert firmware.cells == ["RVT04B6Q", "RVT05B6Q"] and not firmware.explained


def test_drift_among_a_series_runs_reads_the_facts_of_the_runs_around_a_change_only(
    lab: Any, django_assert_num_queries: Any
) -> None:
    runs = [ran(lab, day, recorded(firmware="RVT04B6Q" if day < 6 else "RVT05B6Q")) for day in range(10)]
    with django_assert_num_queries(2):  # every run's fingerprint, then the facts of runs 1, 6, 7 and 10
        [found] = drift_among([run.pk for run in runs], {lab[0].pk: "lab1"}, {lab[1].pk: "lab1:ssd0"})
    assert (found.change.before.run_id, found.change.after.run_id) == (runs[5].pk, runs[6].pk)
    assert (found.before, found.after) == (6, 4)
    said = found.said_between("round 6 and 7")
    assert said == "lab1:ssd0: firmware changed from RVT04B6Q to RVT05B6Q between round 6 and 7"


def test_the_edges_of_stretches_of_identical_records_are_kept() -> None:
    rows = [{"pk": i, "facts": facts} for i, facts in enumerate("aaabbba")]
    assert _edges(rows) == [0, 2, 3, 5, 6]
    assert _edges(rows[:1]) == [0] and _edges([]) == []
