"""Comparisons warn about every confound (runs.compare.confounds): a field the grouping pools or does not
explain is a warning at the top naming it and the groups, and the verdicts it touches are marked
on the page, the report, the campaign page and the CSV export. A page-size comparison whose
builds differ in more than the page size says so. With real Run rows (runs.tests.factories)."""

import csv
import io
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from runs.compare.install_origin import configure_flags
from runs.compare.query import ComparisonQuery
from runs.compare.selectors.comparison import compare_runs
from runs.models import (
    BuildSourceKind,
    BuildState,
    Campaign,
    CampaignConfiguration,
    Device,
    Host,
    PgBuild,
    PgInstall,
    Run,
)
from runs.tests.compare.test_shares import make_share
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db

PACKAGED = "PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc"
BUILT = "PostgreSQL 15.18 on x86_64-pc-linux-gnu, compiled by gcc"


def environment(version: str = PACKAGED, block_size: int = 8192) -> dict[str, Any]:
    pgbench = version.split(" (")[0].split(" on ")[0].replace("PostgreSQL", "pgbench (PostgreSQL)")
    return {
        "host": {"kernel": "6.1.0-28-amd64"},
        "postgresql": {"version": version, "block_size": block_size, "wal_block_size": 8192},
        "pgbench": {"version": pgbench},
    }


def ids(runs: list[Run]) -> tuple[int, ...]:
    return tuple(run.pk for run in runs)


# --- device by mount options, with 8 clients for 12 s on one device and 4 for 20 s on the other ---


@pytest.fixture
def mixed() -> list[Run]:
    return make_mixed()


def make_mixed() -> list[Run]:
    """The walkthrough's case: the SSD's runs had 8 clients for 12 s, the HDD's 4 for 20 s."""
    host = make_host()
    ssd, pg = make_device(host), make_pg_install(host)
    hdd = make_device(host, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    env = environment()
    runs = []
    for device, clients, duration, tps in ((ssd, 8, 12, 1000.0), (hdd, 4, 20, 50.0)):
        for mount in ("", "noatime"):
            runs += [
                make_run(host, device, pg, mount_options=mount, clients=clients, duration_s=duration,
                         steady_tps_mean=tps + delta, environment=env)
                for delta in (0.0, 10.0, 20.0)
            ]  # fmt: skip
    return runs


def _mixed_query(runs: list[Run]) -> ComparisonQuery:
    return ComparisonQuery(run_ids=ids(runs), group_by=("device_id", "mount_options"))


def test_fields_that_differ_between_groups_outside_the_grouping_are_warnings_naming_them(mixed: list[Run]) -> None:
    result = compare_runs(_mixed_query(mixed))
    assert [g.label for g in result.groups] == [
        "lab1:ssd0 · default mount options", "lab1:ssd0 · noatime",
        "lab1:hdd0 · default mount options", "lab1:hdd0 · noatime",
    ]  # fmt: skip
    clients = next(d for d in result.differences if d.key == "clients")
    assert clients.between and not clients.explained and clients.varies_within == [] and clients.confounded
    assert result.warnings == [
        "clients differs between groups and the grouping does not explain it (group 0 (“lab1:ssd0 · default mount "
        "options”): 8; group 1 (“lab1:ssd0 · noatime”): 8; group 2 (“lab1:hdd0 · default mount options”): 4; "
        "group 3 (“lab1:hdd0 · noatime”): 4)",
        "duration (s) differs between groups and the grouping does not explain it (group 0 (“lab1:ssd0 · default "
        "mount options”): 12; group 1 (“lab1:ssd0 · noatime”): 12; group 2 (“lab1:hdd0 · default mount options”): "
        "20; group 3 (“lab1:hdd0 · noatime”): 20)",
    ]


def test_the_verdicts_a_confound_touches_are_marked_and_only_those(mixed: list[Run]) -> None:
    tps = compare_runs(_mixed_query(mixed)).tables[0]
    markers = [row.marker for row in tps.rows]
    assert markers[:2] == ["", ""]  # the baseline, and the SSD's noatime: same clients and duration
    assert markers[2] == markers[3] == "⚠ confounded: clients 4 vs 8; duration (s) 20 vs 12"
    assert tps.rows[2].comparison is not None and tps.rows[2].comparison.verdict == "slower"
    assert tps.rows[2].marker_title == (
        "Not only the grouping differs from the baseline: clients: 4 here, 8 in the baseline; "
        "duration (s): 20 here, 12 in the baseline"
    )


def test_a_field_pooled_inside_a_group_is_said_to_vary_inside_it(mixed: list[Run]) -> None:
    result = compare_runs(ComparisonQuery(run_ids=ids(mixed), group_by=("mount_options",)))
    clients = next(d for d in result.differences if d.key == "clients")
    assert not clients.between and clients.varies_within == [0, 1]
    assert result.warnings[0].startswith("device varies inside group 0")  # the device is pooled too
    assert result.warnings[1] == (
        "clients varies inside group 0 (“default mount options”) (4 / 8) and group 1 (“noatime”) (4 / 8): "
        "its runs did not all run alike"
    )
    noatime = result.tables[0].rows[1]
    assert "; clients varies inside this group; clients varies inside the baseline; " in noatime.marker


def test_the_page_and_the_report_warn_at_the_top_and_mark_the_verdicts(
    client_for: ClientFactory, mixed: list[Run]
) -> None:
    params = {"runs": ",".join(map(str, ids(mixed))), "group": "device,mount_options"}
    for name in ("compare", "compare-report"):
        page = client_for("vera").get(reverse(name), params).content.decode()
        warnings = page.index('id="differs-warnings"')
        assert warnings < page.index('id="statistics"'), name  # at the top, before the numbers
        assert "clients differs between groups" in page and "duration (s) differs between groups" in page
        assert page.count("⚠ confounded: clients 4 vs 8; duration (s) 20 vs 12</span>") == 2, name
        assert 'title="Not only the grouping differs from the baseline: clients: 4 here' in page
        assert "pooled within groups" not in page
        assert ">differs between groups</span>" in page  # the label in "what differs"


def test_the_summary_export_marks_the_confounded_verdicts(client_for: ClientFactory, mixed: list[Run]) -> None:
    params = {"runs": ",".join(map(str, ids(mixed))), "group": "device,mount_options", "what": "summary"}
    answer = client_for("vera").get(reverse("compare-export-csv"), params).content.decode()
    tps = [row for row in csv.DictReader(io.StringIO(answer)) if row["metric"] == "steady_tps"]
    assert [row["confounded"] for row in tps] == ["", "", *["⚠ confounded: clients 4 vs 8; duration (s) 20 vs 12"] * 2]


# --- campaign 5's mix: a 15.18 benchlab build with 4 kB pages against Debian's packaged 15.20, 8 kB ---


def _build(pg: PgInstall, version: str, block_kb: int) -> PgBuild:
    return PgBuild.objects.create(
        host=pg.host, version=version, source_kind=BuildSourceKind.DEBIAN, package="postgresql-15",
        package_version=f"{version}-0+deb12u1", block_size_kb=block_kb, key=f"k{block_kb}{version}",
        prefix=pg.bin_dir.removesuffix("/bin"), state=BuildState.DONE, pg_install=pg,
    )  # fmt: skip


def _campaign(name: str, installs: list[tuple[PgInstall, dict[str, Any], list[float]]]) -> tuple[Campaign, list[Run]]:
    """A campaign with a configuration per install, each run with its tps and environment."""
    campaign = Campaign.objects.create(name=name, base_spec={}, variables=[], repetitions=3)
    runs = []
    for index, (pg, env, values) in enumerate(installs):
        label = f"PostgreSQL install {pg}"
        configuration = CampaignConfiguration.objects.create(campaign=campaign, index=index, label=label, spec={})
        device = Device.objects.get(host=pg.host)
        runs += [
            make_run(pg.host, device, pg, campaign=campaign, configuration=configuration, repetition=n,
                     steady_tps_mean=tps, environment=env)
            for n, tps in enumerate(values, start=1)
        ]  # fmt: skip
    return campaign, runs


@pytest.fixture
def campaign_5() -> tuple[Campaign, list[Run]]:
    return make_campaign_5()


def make_campaign_5(host: Host | None = None) -> tuple[Campaign, list[Run]]:
    """A 15.18 benchlab build with 4 kB pages against Debian's packaged 15.20 with 8 kB."""
    host = host or make_host()
    make_device(host)
    built = make_pg_install(host, bin_dir="/var/lib/benchlab/builds/k4/bin", version="15.18", block_size=4096)
    _build(built, "15.18", 4)
    packaged = make_pg_install(host, version="15.20")
    return _campaign(
        "page size 4 vs 8 kB",
        [
            (built, environment(BUILT, 4096), [1100.0, 1110.0, 1120.0]),
            (packaged, environment(PACKAGED, 8192), [1000.0, 1010.0, 1020.0]),
        ],
    )


PAGE_SIZE_SENTENCE = (
    "These page sizes come from different builds: 4 kB is PostgreSQL 15.18, built by benchlab from Debian source "
    "postgresql-15 15.18-0+deb12u1, no extra configure flags; 8 kB is PostgreSQL 15.20 (Debian 15.20-0+deb12u1), "
    "Debian package: version, build and pgbench version differ, not only the page size."
)


def test_page_sizes_from_different_builds_are_said_and_the_install_does_not_explain_them(
    campaign_5: tuple[Campaign, list[Run]],
) -> None:
    campaign, _ = campaign_5
    for grouping in ((), ("pg_install_id",)):  # one group per configuration, or by install
        result = compare_runs(ComparisonQuery(campaign_id=campaign.pk, group_by=grouping))
        assert result.warnings[0] == PAGE_SIZE_SENTENCE
        said = {d.key: d for d in result.differences}
        assert said["block_size"].explained and not said["block_size"].confounded  # the question itself
        for key in ("pg_version", "build", "pgbench_version"):
            assert said[key].confounded, key
        assert said["build"].cells == [
            "built by benchlab from Debian source postgresql-15 15.18-0+deb12u1, no extra configure flags",
            "Debian package",
        ]
        assert "version" in result.tables[0].rows[1].marker


def test_the_campaign_page_warns_about_the_mixed_builds_and_marks_its_verdicts(
    client_for: ClientFactory, campaign_5: tuple[Campaign, list[Run]]
) -> None:
    campaign, _ = campaign_5
    page = client_for("vera").get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert PAGE_SIZE_SENTENCE in page
    assert page.index('id="differs-warnings"') < page.index('id="statistics"')
    assert "⚠ confounded: PostgreSQL version differs; PostgreSQL build differs; pgbench version differs" in page
    assert (
        "PostgreSQL version: PostgreSQL 15.20 (Debian 15.20-0+deb12u1) here, PostgreSQL 15.18 in the baseline" in page
    )


def test_the_campaign_api_warns_and_marks_as_the_campaign_page_does(
    client_for: ClientFactory, campaign_5: tuple[Campaign, list[Run]]
) -> None:
    campaign, _ = campaign_5
    data = client_for("vera").get(f"/api/campaigns/{campaign.pk}/").json()
    assert data["warnings"][0] == PAGE_SIZE_SENTENCE
    rows = data["statistics"]["steady_tps"]["rows"]
    assert [row["configuration"] for row in rows] == [0, 1] and rows[0]["confounded"] is None  # the baseline
    assert rows[1]["confounded"].startswith("Not only the grouping differs from the baseline: PostgreSQL version: ")


def test_builds_of_one_source_differing_only_in_page_size_are_no_warning() -> None:
    host = make_host()
    make_device(host)
    four = make_pg_install(host, bin_dir="/var/lib/benchlab/builds/k4/bin", version="15.18", block_size=4096)
    eight = make_pg_install(host, bin_dir="/var/lib/benchlab/builds/k8/bin", version="15.18")
    _build(four, "15.18", 4), _build(eight, "15.18", 8)
    campaign, _ = _campaign(
        "page size, one source",
        [(four, environment(BUILT, 4096), [1.0, 2.0]), (eight, environment(BUILT, 8192), [3.0, 4.0])],
    )
    result = compare_runs(ComparisonQuery(campaign_id=campaign.pk))
    assert result.warnings == []
    assert [row.marker for row in result.tables[0].rows] == ["", ""]


def test_two_versions_with_one_page_size_are_what_the_install_grouping_explains() -> None:
    host = make_host()
    make_device(host)
    old = make_pg_install(host, bin_dir="/usr/lib/postgresql/15/bin", version="15.20")
    new = make_pg_install(host, bin_dir="/usr/lib/postgresql/16/bin", version="16.4")
    newer = PACKAGED.replace("15.20", "16.4")
    campaign, _ = _campaign(
        "15 vs 16", [(old, environment(PACKAGED), [1.0, 2.0]), (new, environment(newer), [3.0, 4.0])]
    )
    assert compare_runs(ComparisonQuery(campaign_id=campaign.pk)).warnings == []


def test_shared_pages_warn_and_mark_as_the_pages_do(client_for: ClientFactory, mixed: list[Run]) -> None:
    vera, anonymous = client_for("vera"), Client()
    runs = ",".join(map(str, ids(mixed)))
    comparison = make_share(vera, kind="comparison", runs=runs, group="device,mount_options", title="ssd or hdd")
    campaign_5, _ = make_campaign_5(make_host(name="lab2", address="10.200.0.12"))
    campaign = make_share(vera, kind="campaign", target=campaign_5.pk)
    for url in (comparison, f"{comparison}print/"):
        page = anonymous.get(url).content.decode()
        assert "clients differs between groups" in page and "⚠ confounded: clients 4 vs 8" in page, url
    for url in (campaign, f"{campaign}compare/", f"{campaign}compare/print/"):
        page = anonymous.get(url).content.decode()
        assert PAGE_SIZE_SENTENCE in page and '<span class="confounded"' in page, url
    table = anonymous.get(f"{campaign}compare/export.csv?what=table").content.decode()
    assert table.splitlines()[:2] == ["page size,avg,stdev,min,median,max,n", "4 kB,1110.0,10.0,1100.0,1110.0,1120.0,3"]


def test_installs_benchlab_did_not_build_are_told_apart_by_their_configure_flags() -> None:
    flags = "'--prefix=/opt/pg4' '--with-blocksize=4' '--enable-debug' 'CFLAGS=-O2 -g' '--with-includes=/usr/x'"
    assert configure_flags(flags) == "--enable-debug CFLAGS=-O2 -g"  # no page size, no path
    host = make_host()
    make_device(host)
    four = make_pg_install(host, bin_dir="/opt/pg4/bin", version="15.18", block_size=4096)
    eight = make_pg_install(host, bin_dir="/opt/pg8/bin", version="15.18")

    def ran(block_size: int, configure: str) -> dict[str, Any]:
        env = environment(BUILT, block_size)
        env["postgresql"]["configure"] = f"'--prefix=/opt/pg{block_size // 1024}' {configure}"
        return env

    campaign, _ = _campaign(
        "page size, hand-built",
        [(four, ran(4096, "'--enable-debug'"), [1.0, 2.0]), (eight, ran(8192, "'--enable-cassert'"), [3.0, 4.0])],
    )
    result = compare_runs(ComparisonQuery(campaign_id=campaign.pk))
    assert result.warnings[0] == (
        "These page sizes come from different builds: 4 kB is PostgreSQL 15.18, installed on the host, not built by "
        "benchlab, configured with --enable-debug; 8 kB is PostgreSQL 15.18, installed on the host, not built by "
        "benchlab, configured with --enable-cassert: build differs, not only the page size."
    )
