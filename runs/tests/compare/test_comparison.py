"""Comparisons: grouping and regrouping, the statistics per group (hand-checked), what differs
(a field, an environment fact, nothing), the query's refusals, the page, its data and exports."""

import csv
import io
import json
from typing import Any

import pytest
from django.urls import reverse

from runs.common.params import BadParameter
from runs.compare.query import ComparisonQuery
from runs.compare.selectors.comparison import compare_runs, comparison_data
from runs.compare.selectors.export import summary_rows
from runs.models import Device, Host, PgInstall, Run, RunSample, RunState
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db


def environment(kernel: str = "6.1.0-28-amd64", shared_buffers: str = "16384", mounted: str = "rw,relatime") -> dict:
    return {
        "host": {"kernel": kernel, "memory_bytes": 25769803776, "cpu_model": "Xeon", "cpu_cores": 2},
        "device": {"model": "TEST SSD", "capacity_bytes": 805306368},
        "filesystem": {"mount_options": mounted},
        "postgresql": {
            "version": "PostgreSQL 15.19 (Debian 15.19-0+deb12u1) on x86_64-pc-linux-gnu",
            "block_size": 8192,
            "wal_block_size": 8192,
            # port and data_directory differ for every run by design: never a difference
            "non_default_settings": {"shared_buffers": shared_buffers, "port": "5433", "data_directory": "/x"},
        },
        "pgbench": {"version": "pgbench (PostgreSQL) 15.19", "host": "lab1"},
    }


@pytest.fixture
def lab() -> tuple[Host, Device, PgInstall]:
    host = make_host()
    return host, make_device(host), make_pg_install(host)


def runs_of(lab: tuple[Host, Device, PgInstall], tps: list[float], **fields: Any) -> list[Run]:
    env = fields.pop("environment", environment())
    return [make_run(*lab, steady_tps_mean=value, environment=env, **fields) for value in tps]


def ids(runs: list[Run]) -> tuple[int, ...]:
    return tuple(run.pk for run in runs)


def test_repetitions_of_one_configuration_form_one_group_with_hand_checked_statistics(lab: Any) -> None:
    default = runs_of(lab, [100.0, 110.0, 120.0], mount_options="")
    noatime = runs_of(lab, [200.0, 210.0, 220.0], mount_options="noatime")
    result = compare_runs(ComparisonQuery(run_ids=ids(noatime + default)))
    assert [g.label for g in result.groups] == ["default mount options", "noatime"]  # by id: first queued first
    assert [len(g.runs) for g in result.groups] == [3, 3]
    tps = result.tables[0]
    assert tps.metric.key == "steady_tps"
    base, other = tps.rows
    assert (base.summary.n, base.summary.mean, base.summary.sd) == (3, 110.0, 10.0)
    assert (base.summary.minimum, base.summary.median, base.summary.maximum) == (100.0, 110.0, 120.0)
    # t(0.975, 2) = 4.302653; half width 4.302653 * 10 / sqrt(3) = 24.841
    assert base.summary.ci_low == pytest.approx(85.159, abs=1e-3)
    assert base.comparison is None and other.comparison is not None
    assert other.comparison.ratio == pytest.approx(210 / 110)
    assert other.comparison.verdict == "faster"
    assert ("filesystem", "ext4") in [(label.lower(), value) for label, value in result.common]


def test_regrouping_by_filesystem_pools_mount_options(lab: Any) -> None:
    runs = [
        *runs_of(lab, [100.0, 102.0], filesystem="ext4", mount_options=""),
        *runs_of(lab, [104.0, 106.0], filesystem="ext4", mount_options="noatime"),
        *runs_of(lab, [50.0, 52.0], filesystem="xfs", mount_options=""),
    ]
    result = compare_runs(ComparisonQuery(run_ids=ids(runs), group_by=("filesystem",)))
    assert [(g.label, len(g.runs)) for g in result.groups] == [("ext4", 4), ("xfs", 2)]
    assert result.tables[0].rows[0].summary.mean == pytest.approx(103.0)
    mount = next(d for d in result.differences if d.label.lower() == "mount options")
    assert not mount.explained and mount.varies_within == [0]
    assert mount.cells == ["default mount options / noatime", "default mount options"]
    # Pooled on purpose, still said: the ext4 group mixes two mount options, xfs has one.
    assert result.warnings == [
        "mount options differs between groups and the grouping does not explain it "
        "(group 0 (“ext4”): default mount options / noatime; group 1 (“xfs”): default mount options); "
        "mount options varies inside group 0 (“ext4”) (default mount options / noatime): its runs did not all run alike"
    ]


def test_a_difference_in_one_field_is_explained_by_the_grouping(lab: Any) -> None:
    runs = runs_of(lab, [1.0, 2.0], mount_options="") + runs_of(lab, [3.0, 4.0], mount_options="noatime")
    result = compare_runs(ComparisonQuery(run_ids=ids(runs)))
    assert [(d.label.lower(), d.explained) for d in result.differences] == [("mount options", True)]
    assert result.warnings == []


def test_groups_are_labelled_with_the_page_size_the_server_reported(lab: Any) -> None:
    host, device, eight_kb = lab
    four_kb = make_pg_install(host, bin_dir="/opt/pg4/bin", block_size=4096, label="PG 15, 4 kB pages (build)")
    wrong = make_pg_install(host, bin_dir="/opt/pg2/bin", block_size=2048)  # the inventory says 2 kB
    ran_4 = environment() | {"postgresql": environment()["postgresql"] | {"block_size": 4096}}
    runs = (
        runs_of(lab, [1.0, 2.0])
        + runs_of((host, device, four_kb), [3.0, 4.0], environment=ran_4)
        + runs_of((host, device, wrong), [5.0, 6.0], environment=ran_4)
    )
    result = compare_runs(ComparisonQuery(run_ids=ids(runs)))
    labels = [group.label for group in result.groups]
    assert labels == [
        f"PostgreSQL {eight_kb.version}, 8 kB pages",
        "PG 15, 4 kB pages (build)",
        f"PostgreSQL {wrong.version}, 4 kB pages",  # what the server said, not the inventory's 2 kB
    ]


def test_an_environment_fact_the_grouping_does_not_explain_is_a_warning(lab: Any) -> None:
    # Two "ext4 default" groups (they differ in clients) on different kernels: the seeds' question.
    runs = runs_of(lab, [1.0, 2.0], clients=2) + runs_of(
        lab, [3.0, 4.0], clients=8, environment=environment(kernel="6.12.0-1-amd64")
    )
    result = compare_runs(ComparisonQuery(run_ids=ids(runs)))
    kernel = next(d for d in result.differences if d.label == "kernel")
    assert kernel.cells == ["6.1.0-28-amd64", "6.12.0-1-amd64"] and not kernel.explained
    assert len(result.warnings) == 1
    assert "kernel differs between groups and the grouping does not explain it" in result.warnings[0]


def test_a_fact_that_varies_within_a_group_is_a_warning_even_when_explained(lab: Any) -> None:
    first, second = runs_of(lab, [1.0]), runs_of(lab, [2.0], environment=environment(shared_buffers="4096"))
    result = compare_runs(ComparisonQuery(run_ids=ids(first + second)))
    assert [d.label for d in result.differences] == ["setting shared_buffers"]
    assert result.warnings == [
        "setting shared_buffers varies inside group 0 (“all runs”) (128MB / 32MB): its runs did not all run alike"
    ]


def test_runs_that_differ_in_nothing(lab: Any) -> None:
    result = compare_runs(ComparisonQuery(run_ids=ids(runs_of(lab, [1.0, 2.0, 3.0]))))
    assert result.differences == [] and result.warnings == []
    assert [g.label for g in result.groups] == ["all runs"]


def test_facets_put_each_group_in_the_panel_of_its_device(lab: Any) -> None:
    host, ssd, pg = lab
    hdd = make_device(host, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    runs = []
    for device in (ssd, hdd):
        for options in ("", "barrier=0"):
            runs += runs_of((host, device, pg), [1.0, 2.0], mount_options=options)
    result = compare_runs(ComparisonQuery(run_ids=ids(runs), facet="device_id"))
    assert result.facets == ["lab1:ssd0", "lab1:hdd0"]
    assert [(g.facet, g.label) for g in result.groups] == [
        ("lab1:ssd0", "default mount options"),
        ("lab1:ssd0", "barrier=0"),
        ("lab1:hdd0", "default mount options"),
        ("lab1:hdd0", "barrier=0"),
    ]


def test_failed_runs_are_counted_apart_and_unfinished_ones_not_at_all(lab: Any) -> None:
    runs = runs_of(lab, [10.0, 20.0])
    runs.append(make_run(*lab, state=RunState.FAILED, error="mkfs failed"))
    runs.append(make_run(*lab, state=RunState.QUEUED))
    row = compare_runs(ComparisonQuery(run_ids=ids(runs))).tables[0].rows[0]
    assert (row.summary.n, row.failed) == (2, 1)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "a comparison needs runs"),
        ({"runs": "1,x"}, "runs must be run ids separated by commas"),
        ({"runs": "1", "campaign": "2"}, "give runs, or a campaign and filters, not both"),
        ({"runs": "1", "group": "colour"}, "group must be one of server_host, device, filesystem"),
        ({"runs": "1", "group": "device", "facet": "filesystem"}, "facet by filesystem needs the runs grouped by it"),
        ({"runs": "1", "baseline": "-1"}, "baseline must be a whole number"),
        ({"runs": ",".join(map(str, range(1, 1100)))}, "runs takes at most 1000 run ids"),
    ],
)
def test_bad_queries_say_what_is_allowed(params: dict[str, str], message: str) -> None:
    with pytest.raises(BadParameter, match=message):
        ComparisonQuery.from_params(params)


def test_unknown_runs_and_a_baseline_past_the_groups_are_refused(lab: Any) -> None:
    run = runs_of(lab, [1.0])[0]
    with pytest.raises(BadParameter, match=f"there is no run {run.pk + 1}"):
        compare_runs(ComparisonQuery(run_ids=(run.pk, run.pk + 1)))
    with pytest.raises(BadParameter, match="baseline must be a group number from 0 to 0, not 3"):
        compare_runs(ComparisonQuery(run_ids=(run.pk,), baseline=3))


def test_the_query_string_round_trips() -> None:
    query = ComparisonQuery.from_params({"runs": "3,1,2", "group": "device,filesystem", "facet": "device"})
    assert query.run_ids == (3, 1, 2) and query.group_by == ("device_id", "filesystem")
    assert ComparisonQuery.from_params(query.as_params()) == query
    assert ComparisonQuery.from_share([3, 1, 2], query.options()) == query


def test_runs_are_grouped_by_their_client_hosts_in_order(lab: Any) -> None:
    lab2, lab3 = make_host(name="lab2", address="10.200.0.12"), make_host(name="lab3", address="10.200.0.13")
    both = runs_of(lab, [300.0, 310.0], client_hosts=[lab2, lab3])
    shared = runs_of(lab, [320.0], client_hosts=[lab2, lab3], shared_database=True)
    one = runs_of(lab, [200.0], client_hosts=[lab2])
    server = runs_of(lab, [100.0])

    result = compare_runs(ComparisonQuery(run_ids=ids(both + shared + one + server)))
    by_clients = compare_runs(ComparisonQuery.from_params({"runs": ",".join(map(str, ids(both + one + server))),
                                                           "group": "client_hosts"}))  # fmt: skip

    assert [g.label for g in result.groups] == [
        "pgbench on lab2+lab3 · a database per client host",
        "pgbench on lab2+lab3 · one database for all client hosts",
        "pgbench on lab2 · one database",
        "pgbench on the server · one database",
    ]
    assert [len(g.runs) for g in result.groups] == [2, 1, 1, 1]
    assert [g.label for g in by_clients.groups] == ["pgbench on lab2+lab3", "pgbench on lab2", "pgbench on the server"]
    assert [g.key for g in by_clients.groups] == [((lab2.pk, lab3.pk),), ((lab2.pk,),), ((),)]


def test_links_grouped_by_the_one_client_host_of_old_still_read() -> None:
    old = ComparisonQuery.from_params({"runs": "1,2", "group": "client_host,filesystem", "facet": "client_host"})

    assert (old.group_by, old.facet) == (("client_host_ids", "filesystem"), "client_host_ids")
    assert old.as_params()["group"] == "client_hosts,filesystem"
    assert ComparisonQuery.from_params(old.as_params()) == old


@pytest.fixture
def two_groups(lab: Any) -> list[Run]:
    runs = runs_of(lab, [100.0, 110.0, 120.0], mount_options="") + runs_of(
        lab, [150.0, 160.0], mount_options="noatime", warmup_s=2
    )
    for run in runs:
        RunSample.objects.bulk_create(
            RunSample(run=run, second=s, tps=(run.steady_tps_mean or 0) + s, latency_ms=1.5, warmup=s <= run.warmup_s)
            for s in range(1, 6)
        )
    return runs


def test_the_page_shows_the_tables_and_what_differs(client_for: ClientFactory, two_groups: list[Run]) -> None:
    answer = client_for("vera").get(reverse("compare"), {"runs": ",".join(map(str, ids(two_groups)))})
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "110.00 ± 10.00" in page and "155.00 ± 7.07" in page
    assert "mount options" in page.lower() and "noatime" in page
    assert 'id="export-summary-csv"' in page


def test_the_form_sends_one_group_parameter_per_checkbox(client_for: ClientFactory, two_groups: list[Run]) -> None:
    runs = ",".join(map(str, ids(two_groups)))
    answer = client_for("vera").get(f"{reverse('compare')}?runs={runs}&group=filesystem&group=warmup_s")
    assert answer.status_code == 200
    assert answer.context["result"].query.group_by == ("filesystem", "warmup_s")


def test_bad_input_is_a_400_page_with_the_reason(client_for: ClientFactory) -> None:
    answer = client_for("vera").get(reverse("compare"), {"runs": "99999"})
    assert answer.status_code == 400 and "there is no run 99999" in answer.content.decode()
    data = client_for("vera").get(reverse("compare-data"), {"runs": "1,zz"})
    assert data.status_code == 400 and "runs must be run ids" in data.json()["error"]


def test_the_data_csv_and_json_exports_hold_the_tables_numbers(
    client_for: ClientFactory, two_groups: list[Run]
) -> None:
    params = {"runs": ",".join(map(str, ids(two_groups)))}
    client = client_for("vera")
    data = client.get(reverse("compare-data"), params).json()
    result = compare_runs(ComparisonQuery(run_ids=ids(two_groups)))
    assert data == json.loads(json.dumps(comparison_data(result)))
    summary = client.get(reverse("compare-export-json"), params | {"what": "summary"}).json()["rows"]
    assert summary == json.loads(json.dumps(summary_rows(result)))
    table = list(csv.DictReader(io.StringIO(client.get(reverse("compare-export-csv"), params).content.decode())))
    assert len(table) == len(summary)
    for from_csv, from_json in zip(table, summary, strict=True):
        for key in ("mean", "sd", "ci_low", "ci_high", "ratio", "welch_p"):
            expected = from_json[key]
            assert (float(from_csv[key]) if from_csv[key] else None) == expected, key
    tps = data["metrics"][0]
    assert [row["summary"]["mean"] for row in tps["rows"]] == [110.0, 155.0]
    assert [v["value"] for v in tps["rows"][0]["values"]] == [100.0, 110.0, 120.0]


def test_the_series_export_has_every_sample_of_every_run(client_for: ClientFactory, two_groups: list[Run]) -> None:
    params = {"runs": ",".join(map(str, ids(two_groups))), "what": "series"}
    answer = client_for("vera").get(reverse("compare-export-csv"), params)
    rows = list(csv.DictReader(io.StringIO(answer.getvalue().decode())))
    assert len(rows) == 5 * 5
    assert rows[0] == {
        "run": str(two_groups[0].pk), "group": "0", "configuration": "default mount options · warm-up 0 s",
        "driver": "pgbench", "second": "1", "tps": "101.0", "latency_ms": "1.5", "warmup": "False",
        "qps": "", "latency_p95_ms": "",
    }  # fmt: skip
    series = client_for("vera").get(reverse("compare-export-json"), params).json()["rows"]
    assert [r["tps"] for r in series] == [float(r["tps"]) for r in rows]


def test_the_campaign_page_link_and_a_campaign_comparison(client_for: ClientFactory, lab: Any) -> None:
    from runs.models import Campaign

    campaign = Campaign.objects.create(name="mount options", base_spec={}, variables=[], repetitions=2)
    runs = runs_of(lab, [1.0, 2.0], campaign=campaign)
    data = client_for("vera").get(reverse("compare-data"), {"campaign": campaign.pk}).json()
    assert data["title"] == "mount options" and data["groups"][0]["runs"] == list(ids(runs))


def test_the_page_takes_a_fixed_number_of_queries(
    client_for: ClientFactory, lab: Any, django_assert_max_num_queries: Any
) -> None:
    runs = runs_of(lab, [float(i) for i in range(40)], mount_options="") + runs_of(lab, [1.0] * 40, clients=8)
    client = client_for("vera")
    with django_assert_max_num_queries(12):
        assert client.get(reverse("compare-data"), {"runs": ",".join(map(str, ids(runs)))}).status_code == 200


def test_the_api_answers_the_pages_numbers(client_for: ClientFactory, two_groups: list[Run]) -> None:
    client = client_for("vera")
    params = {"runs": ",".join(map(str, ids(two_groups))), "group": "mount_options"}
    page_data = client.get(reverse("compare-data"), params).json()
    assert client.get(reverse("api:comparison-list"), params).json() == page_data
    summary = client.get(reverse("api:comparison-summary"), params).json()["rows"]
    assert [row["mean"] for row in summary if row["metric"] == "steady_tps"] == [110.0, 155.0]
    as_csv = client.get(reverse("api:comparison-summary"), params | {"file": "csv"})
    assert as_csv["Content-Type"].startswith("text/csv") and "steady_tps" in as_csv.content.decode()
    series = client.get(reverse("api:comparison-series"), params).json()["rows"]
    assert len(series) == 25


def test_the_api_refuses_a_bad_comparison_with_the_reason(client_for: ClientFactory) -> None:
    answer = client_for("vera").get(reverse("api:comparison-list"), {"runs": "1", "group": "colour"})
    assert answer.status_code == 400 and "group must be one of" in answer.json()["detail"]
    answer = client_for("vera").get(reverse("api:comparison-summary"), {"runs": "1", "file": "xls"})
    assert answer.status_code == 400 and "file must be one of json, csv" in str(answer.json())


def test_a_campaigns_comparison_in_the_api(client_for: ClientFactory, lab: Any) -> None:
    from runs.models import Campaign

    campaign = Campaign.objects.create(name="page sizes", base_spec={}, variables=[], repetitions=2)
    runs = runs_of(lab, [1.0, 3.0], campaign=campaign)
    data = client_for("vera").get(reverse("api:campaign-comparison", args=[campaign.pk])).json()
    assert data["title"] == "page sizes" and data["metrics"][0]["rows"][0]["summary"]["mean"] == 2.0
    assert data["groups"][0]["done"] == list(ids(runs))


def test_a_kernel_that_changed_between_two_groups_on_one_device_is_not_explained_by_the_device(lab: Any) -> None:
    host, _, pg = lab
    hdd = make_device(host, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    runs = runs_of(lab, [1.0], mount_options="") + runs_of(lab, [2.0], mount_options="barrier=0")
    runs += runs_of((host, hdd, pg), [3.0], mount_options="")
    runs += runs_of((host, hdd, pg), [4.0], mount_options="barrier=0", environment=environment(kernel="6.12.0"))
    result = compare_runs(ComparisonQuery(run_ids=ids(runs)))
    kernel = next(d for d in result.differences if d.label == "kernel")
    assert not kernel.explained and len(result.warnings) == 1
    # Grouped by device alone, the HDD's runs differ in kernel within their group: still a warning.
    pooled = compare_runs(ComparisonQuery(run_ids=ids(runs), group_by=("device_id",)))
    assert [w.split(": its")[0] for w in pooled.warnings] == [
        "mount options varies inside group 0 (“lab1:ssd0”) (barrier=0 / default mount options) "
        "and group 1 (“lab1:hdd0”) (barrier=0 / default mount options)",
        "kernel varies inside group 1 (“lab1:hdd0”) (6.1.0-28-amd64 / 6.12.0)",
    ]


def test_the_overlaid_runs_are_the_first_of_each_group_or_those_asked_for(
    client_for: ClientFactory, two_groups: list[Run]
) -> None:
    runs = ",".join(map(str, ids(two_groups)))
    client = client_for("vera")
    default = client.get(reverse("compare-data"), {"runs": runs}).json()["series"]
    assert [s["run"] for s in default] == [two_groups[0].pk, two_groups[3].pk]
    assert default[1]["warmup_s"] == 2 and default[1]["tps"] == [151.0, 152.0, 153.0, 154.0, 155.0]
    chosen = client.get(reverse("compare-data"), {"runs": runs, "show": f"{two_groups[1].pk},{two_groups[4].pk}"})
    assert [s["run"] for s in chosen.json()["series"]] == [two_groups[1].pk, two_groups[4].pk]
    page = client.get(reverse("compare"), {"runs": runs, "show": str(two_groups[2].pk)}).content.decode()
    assert f'name="show" value="{two_groups[2].pk}" form="compare-controls" checked' in page
    refused = client.get(reverse("compare-data"), {"runs": runs, "show": "999999"})
    assert refused.status_code == 400
    assert "show names run 999999, which is not among the compared runs" in refused.json()["error"]
