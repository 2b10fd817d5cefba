"""iostat and vmstat series as an array per column (bench.services.os_series), the small per-run
figures lists and comparisons read instead (device_util_pct, cache_hit_pct, os_means), the
charts' data and the API read back from the arrays, and migration 0013 moving the series of
existing runs out of Run.metrics (and back)."""

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries
from rest_framework.test import APIClient

from runs.bench.selectors.run_page import run_chart_data
from runs.bench.services.observer import RunObserver
from runs.bench.services.os_series import os_means, os_series_columns, os_series_store
from runs.bench.services.results import store_results
from runs.campaigns.selectors.results import campaign_runs, campaign_statistics
from runs.compare.metrics import METRICS
from runs.compare.stats import summarise
from runs.lab.benchmark.checkpoints import CheckpointEvent, Checkpoints
from runs.lab.benchmark.metrics import OsMetrics, PgStatsDelta
from runs.lab.benchmark.run import BenchmarkResult
from runs.lab.parse.sysstat import IostatSample, VmstatSample
from runs.lab.storage.prepare import PreparedStorage
from runs.models import Campaign, CampaignConfiguration, Run, RunOsSeries
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 23, 18, 0, 0, tzinfo=UTC)
IOSTAT = [
    IostatSample(T0, "loop3", r_per_s=10.0, w_per_s=200.0, rkb_per_s=40.0, wkb_per_s=800.0, r_await_ms=0.5,
                 w_await_ms=None, aqu_sz=0.25, util_pct=50.0),
    IostatSample(T0, "loop3", r_per_s=30.0, w_per_s=100.0, rkb_per_s=120.0, wkb_per_s=400.0, r_await_ms=1.5,
                 w_await_ms=4.0, aqu_sz=0.75, util_pct=70.0),
]  # fmt: skip
VMSTAT = [
    VmstatSample(T0, r=1, b=0, swpd=0, free=9000, buff=10, cache=500, si=0, so=0, bi=4, bo=800, in_=900, cs=2000,
                 us=20, sy=10, id=60, wa=10),
    VmstatSample(T0, r=2, b=1, swpd=0, free=8000, buff=10, cache=600, si=0, so=0, bi=8, bo=400, in_=700, cs=1000,
                 us=30, sy=20, id=40, wa=10, st=0),
]  # fmt: skip
MEANS = {
    "iostat": {"util_pct": 60.0, "r_await_ms": 1.0, "w_await_ms": 4.0, "r_per_s": 20.0, "w_per_s": 150.0},
    "vmstat": {"us": 25.0, "sy": 15.0, "wa": 10.0, "id": 50.0},
}


def finished_run(host_name: str = "lab1", **fields: Any) -> Run:
    host = make_host(name=host_name)
    return make_run(host, make_device(host), make_pg_install(host), **fields)


def stored(run: Run) -> dict[tuple[str, str], list[float | None]]:
    return {
        (s, c): values for s, c, values in RunOsSeries.objects.filter(run=run).values_list("source", "column", "values")
    }


def test_the_samples_are_stored_as_an_array_per_column_and_their_means_returned() -> None:
    run = finished_run()

    means = os_series_store(run, OsMetrics(iostat=IOSTAT, vmstat=VMSTAT))

    series = stored(run)
    assert {c for s, c in series if s == "iostat"} == {"r_per_s", "w_per_s", "rkb_per_s", "wkb_per_s", "r_await_ms",
                                                      "w_await_ms", "aqu_sz", "util_pct"}  # fmt: skip
    assert len([c for s, c in series if s == "vmstat"]) == 18  # every column, st and gu included
    assert series["iostat", "util_pct"] == [50.0, 70.0] and series["iostat", "w_await_ms"] == [None, 4.0]
    assert series["vmstat", "in_"] == [900.0, 700.0] and series["vmstat", "st"] == [None, 0.0]
    assert series["vmstat", "gu"] == [None, None]
    assert means == MEANS


def test_storing_again_replaces_the_series_and_a_run_without_iostat_has_no_iostat_means() -> None:
    run = finished_run()
    os_series_store(run, OsMetrics(iostat=IOSTAT, vmstat=VMSTAT))

    means = os_series_store(run, OsMetrics(iostat=[], vmstat=VMSTAT[:1]))  # tmpfs: no device for iostat

    series = stored(run)
    assert {s for s, _ in series} == {"vmstat"} and series["vmstat", "us"] == [20.0]
    assert means["iostat"] == dict.fromkeys(MEANS["iostat"]) and means["vmstat"]["us"] == 20.0


def test_storing_a_runs_results_fills_the_columns_and_leaves_the_series_out_of_metrics() -> None:
    run = finished_run()
    pg_stats = PgStatsDelta(blocks_hit=990, blocks_read=10, transactions_committed=5, transactions_rolled_back=0,
                            checkpoints_timed=1, checkpoints_requested=0, buffers_checkpoint=100, buffers_clean=0,
                            buffers_backend=20, buffers_backend_fsync=0)  # fmt: skip
    result = BenchmarkResult(
        storage=PreparedStorage(mountpoint="/mnt/x", fstype="ext4", device_node="/dev/loop3", mount_options="rw"),
        os=OsMetrics(iostat=IOSTAT, vmstat=VMSTAT),
        pg_stats=pg_stats,
        checkpoints=Checkpoints(1, 0, "pg_stat_bgwriter", [CheckpointEvent(27.25, "time", None)]),
    )

    store_results(run, result, {}, [], RunObserver(run))

    run = Run.objects.get(pk=run.pk)
    assert run.device_util_pct == 60.0 and run.cache_hit_pct == pytest.approx(99.0) and run.os_means == MEANS
    assert run.metrics["cache_hit_ratio"] == pytest.approx(0.99) and run.metrics["checkpoints"] == 1
    assert "iostat" not in run.metrics and "vmstat" not in run.metrics
    assert stored(run)["iostat", "util_pct"] == [50.0, 70.0]
    assert run.environment["method"]["checkpoints"] == {  # issue 32's contract
        "timed": 1,
        "requested": 0,
        "source": "pg_stat_bgwriter",
        "events": [{"second": 27.25, "kind": "time", "duration_s": None}],
    }


def test_the_charts_read_the_drawn_columns_in_two_queries(
    client_for: ClientFactory, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    run, empty = finished_run(), finished_run("lab2")
    os_series_store(run, OsMetrics(iostat=IOSTAT, vmstat=VMSTAT))

    run = Run.objects.prefetch_related("run_clients__host").get(pk=run.pk)  # as the run page loads it
    with django_assert_num_queries(2):
        data = run_chart_data(run)
    served = client_for("vera").get(reverse("run-samples-json", args=[run.pk])).json()

    assert data["iostat"] == {"util_pct": [50.0, 70.0], "r_await_ms": [0.5, 1.5], "w_await_ms": [None, 4.0],
                              "r_per_s": [10.0, 30.0], "w_per_s": [200.0, 100.0]}  # fmt: skip
    assert data["vmstat"] == {"us": [20.0, 30.0], "sy": [10.0, 20.0], "wa": [10.0, 10.0]}
    assert served["iostat"] == data["iostat"] and served["vmstat"] == data["vmstat"]
    assert run_chart_data(empty)["iostat"] == {key: [] for key in data["iostat"]}


def test_the_api_lists_the_small_figures_and_details_the_series() -> None:
    run = finished_run(device_util_pct=60.0, cache_hit_pct=99.0, os_means=MEANS)
    os_series_store(run, OsMetrics(iostat=IOSTAT, vmstat=VMSTAT))
    client = APIClient()
    client.force_authenticate(make_user("vera", "viewer"))

    (listed,) = client.get("/api/runs/").json()["results"]
    detail = client.get(f"/api/runs/{run.pk}/").json()

    assert (listed["device_util_pct"], listed["cache_hit_pct"]) == (60.0, 99.0) and "os_series" not in listed
    assert detail["os_means"] == MEANS and detail["os_series"]["iostat"]["util_pct"] == [50.0, 70.0]
    assert detail["os_series"]["vmstat"]["bo"] == [800.0, 400.0]


def test_campaign_statistics_read_the_columns_without_loading_metrics(
    django_assert_num_queries: DjangoAssertNumQueries,
) -> None:
    campaign = Campaign.objects.create(name="util", base_spec={})
    configuration = CampaignConfiguration.objects.create(campaign=campaign, index=0, label="ext4", spec={})
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    for repetition, (util, hit) in enumerate([(40.0, 98.0), (60.0, 99.0), (None, None)], start=1):
        make_run(host, device, pg, campaign=campaign, configuration=configuration, repetition=repetition,
                 device_util_pct=util, cache_hit_pct=hit, metrics={"cache_hit_ratio": 0.5})  # fmt: skip
    runs = campaign_runs(campaign)

    with django_assert_num_queries(1):  # the configurations; no run goes back for its deferred fields
        tables = {table.metric.key: table for table in campaign_statistics(campaign, runs, 0)}

    # os_means stays: a few numbers, whose vmstat means are the CPU metrics (runs.compare.metrics).
    assert "metrics" in runs[0].get_deferred_fields() and "os_means" not in runs[0].get_deferred_fields()
    assert tables["util"].rows[0].summary == summarise([40.0, 60.0])
    assert tables["cache_hit"].rows[0].summary == summarise([98.0, 99.0])
    assert {metric.key for metric in METRICS} >= {"util", "cache_hit"}


# --- migration 0013 ---------------------------------------------------------------------------------

BEFORE, AFTER = [("runs", "0012_share_links")], [("runs", "0013_os_series")]


def old_metrics(iostat: list[IostatSample], vmstat: list[VmstatSample], cache_hit_ratio: float | None) -> dict:
    """Run.metrics as store_results wrote it before 0013."""
    return {
        "iostat": [dataclasses.asdict(s) | {"timestamp": str(s.timestamp)} for s in iostat],
        "vmstat": [dataclasses.asdict(s) | {"timestamp": str(s.timestamp)} for s in vmstat],
        "cache_hit_ratio": cache_hit_ratio,
        "checkpoints": 1,
    }


def migrate(executor: MigrationExecutor, targets: list[tuple[str, str]]) -> Any:
    """Migrate to targets; the apps (historical models) as they are there."""
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_migration_0013_moves_existing_series_out_of_metrics_and_back() -> None:
    executor = MigrationExecutor(connection)
    try:
        apps = migrate(executor, BEFORE)
        host = apps.get_model("runs", "Host").objects.create(
            name="lab1", address="10.200.0.11", transport="ssh", private_key_path="/root/.ssh/id_ed25519"
        )
        device = apps.get_model("runs", "Device").objects.create(host=host, name="ssd0", kind="ssd", path="/dev/x")
        pg = apps.get_model("runs", "PgInstall").objects.create(host=host, bin_dir="/usr/lib/pg/bin", version="15.1")
        OldRun = apps.get_model("runs", "Run")
        on_disk, on_tmpfs, queued = (
            OldRun.objects.create(server_host=host, device=device, pg_install=pg, state=state, metrics=metrics)
            for state, metrics in [
                ("done", old_metrics(IOSTAT, VMSTAT, 0.99)),
                ("done", old_metrics([], VMSTAT[1:], None)),
                ("queued", {}),
            ]
        )

        apps = migrate(executor, AFTER)
        Run, RunOsSeries = apps.get_model("runs", "Run"), apps.get_model("runs", "RunOsSeries")
        disk, tmpfs, waiting = (Run.objects.get(pk=run.pk) for run in (on_disk, on_tmpfs, queued))
        rows = RunOsSeries.objects.filter(run=disk).values_list("source", "column", "values")
        moved = {(source, column): values for source, column, values in rows}

        # The same arrays and means as storing the samples now would give.
        expected = {("iostat", c): v for c, v in os_series_columns(IostatSample, IOSTAT).items()}
        expected |= {("vmstat", c): v for c, v in os_series_columns(VmstatSample, VMSTAT).items()}
        assert moved == expected
        assert disk.os_means == MEANS and disk.device_util_pct == 60.0 and disk.cache_hit_pct == pytest.approx(99.0)
        assert disk.metrics == {"cache_hit_ratio": 0.99, "checkpoints": 1}
        vmstat_only = os_means({"vmstat": os_series_columns(VmstatSample, VMSTAT[1:])})
        assert tmpfs.os_means == vmstat_only and tmpfs.device_util_pct is None and tmpfs.cache_hit_pct is None
        assert waiting.os_means == {} and not RunOsSeries.objects.filter(run=waiting).exists()

        apps = migrate(executor, BEFORE)
        back = apps.get_model("runs", "Run").objects.get(pk=on_disk.pk).metrics
        # Every value comes back; the timestamps and the device name stay in the raw outputs.
        without = [
            {k: v for k, v in s.items() if k != "device"} | {"timestamp": None} for s in on_disk.metrics["iostat"]
        ]
        assert back["iostat"] == without and back["vmstat"][1]["us"] == 30 and back["vmstat"][0]["st"] is None
        assert back["cache_hit_ratio"] == 0.99
    finally:
        migrate(executor, executor.loader.graph.leaf_nodes())
