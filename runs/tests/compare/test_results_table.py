"""Seed 001's table (runs.compare.results_table): page size | avg ± stdev | min | median | max of tps, on
the campaign page, in the printable report and in the CSV export, with hand-checked numbers:
100, 110, 120 tps are 110.0 ± 10.0, min 100.0, median 110.0, max 120.0."""

import csv
import html
import io
import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from runs.compare.query import ComparisonQuery
from runs.compare.results_table import results_table
from runs.compare.selectors.comparison import compare_runs
from runs.models import Campaign, Device
from runs.tests.compare.test_confounds import BUILT, _build, _campaign, environment
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db

SEED_ROWS = [
    ["2 kB", "110.0 ± 10.0", "100.0", "110.0", "120.0"],
    ["4 kB", "105.0 ± 7.1", "100.0", "105.0", "110.0"],
    ["8 kB", "90.0", "90.0", "90.0", "90.0"],  # one run: no stdev
]


@pytest.fixture
def page_sizes() -> Campaign:
    """2, 4 and 8 kB, each a benchlab build of one source: a page-size study, like for like."""
    host = make_host()
    make_device(host)
    installs = []
    for kb, values in ((2, [120.0, 100.0, 110.0]), (4, [100.0, 110.0]), (8, [90.0])):
        pg = make_pg_install(host, bin_dir=f"/var/lib/benchlab/builds/k{kb}/bin", version="15.18", block_size=kb * 1024)
        _build(pg, "15.18", kb)
        installs.append((pg, environment(BUILT, kb * 1024), values))
    campaign, _ = _campaign("page size 2, 4, 8 kB", installs)
    return campaign


def table_in(page: str) -> list[list[str]]:
    """The results table's rows as text, header first."""
    table = page[page.index('id="results-table"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    return [
        [html.unescape(cell.strip()) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)] for row in rows
    ]


def test_the_table_reads_page_size_and_the_seeds_columns(page_sizes: Campaign) -> None:
    table = results_table(compare_runs(ComparisonQuery(campaign_id=page_sizes.pk)))
    assert table is not None and table.heading == "page size"
    assert [row.label for row in table.rows] == ["2 kB", "4 kB", "8 kB"]
    two = table.rows[0].summary
    assert (two.mean, two.sd, two.minimum, two.median, two.maximum) == (110.0, 10.0, 100.0, 110.0, 120.0)
    assert table.runs_said == "n = 3 (2 kB), 2 (4 kB), 1 (8 kB)"


def test_the_campaign_page_and_the_report_show_the_seeds_table(client_for: ClientFactory, page_sizes: Campaign) -> None:
    client = client_for("vera")
    campaign_page = client.get(reverse("campaign-detail", args=[page_sizes.pk])).content.decode()
    report = client.get(reverse("compare-report"), {"campaign": page_sizes.pk}).content.decode()
    compare_page = client.get(reverse("compare"), {"campaign": page_sizes.pk}).content.decode()
    for name, page in (("campaign", campaign_page), ("report", report), ("compare", compare_page)):
        assert table_in(page) == [["page size", "avg ± stdev", "min", "median", "max"], *SEED_ROWS], name
        assert 'id="differs-warnings"' not in page, name  # one source, one set of flags: nothing to warn about
    assert 'id="results-table-csv"' in campaign_page and 'id="campaign-report"' in campaign_page


def test_the_csv_export_is_the_seeds_table_unrounded(client_for: ClientFactory, page_sizes: Campaign) -> None:
    params: dict[str, str | int] = {"campaign": page_sizes.pk, "what": "table"}
    answer = client_for("vera").get(reverse("compare-export-csv"), params).content.decode()
    assert list(csv.reader(io.StringIO(answer))) == [
        ["page size", "avg", "stdev", "min", "median", "max", "n"],
        ["2 kB", "110.0", "10.0", "100.0", "110.0", "120.0", "3"],
        ["4 kB", "105.0", "7.0710678118654755", "100.0", "105.0", "110.0", "2"],
        ["8 kB", "90.0", "", "90.0", "90.0", "90.0", "1"],
    ]
    data = client_for("vera").get(reverse("compare-export-json"), params).json()
    assert data["heading"] == "page size" and data["rows"][0]["avg"] == 110.0


def test_the_api_gives_the_campaign_pages_csv_byte_for_byte_and_its_json(
    client_for: ClientFactory, page_sizes: Campaign
) -> None:
    page_csv = client_for("vera").get(reverse("compare-export-csv"), {"campaign": str(page_sizes.pk), "what": "table"})
    api = api_client(User.objects.get(username="vera"))
    answer = api.get(f"/api/campaigns/{page_sizes.pk}/results-table/", {"file": "csv"})
    assert answer.status_code == 200 and answer["Content-Type"] == "text/csv; charset=utf-8"
    assert answer.content == page_csv.content and answer.content.startswith(b"page size,avg,stdev,min,median,max,n")
    data = api.get(f"/api/campaigns/{page_sizes.pk}/results-table/").json()
    assert data["heading"] == "page size" and [row["page size"] for row in data["rows"]] == ["2 kB", "4 kB", "8 kB"]
    refused = api.get(f"/api/campaigns/{page_sizes.pk}/results-table/", {"file": "xlsx"})
    assert refused.status_code == 400 and "file" in refused.json()
    assert api.get(f"/api/campaigns/{page_sizes.pk + 1000}/results-table/").status_code == 404


def test_any_other_grouping_names_the_first_column_by_its_fields() -> None:
    host = make_host()
    pg = make_pg_install(host)
    hdd = make_device(host, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    runs = [make_run(host, device, pg, steady_tps_mean=tps) for device in (make_device(host), hdd) for tps in (1, 3)]
    table = results_table(compare_runs(ComparisonQuery(run_ids=tuple(r.pk for r in runs), group_by=("device_id",))))
    assert table is not None and table.heading == "device"
    assert [(row.label, row.summary.mean) for row in table.rows] == [("lab1:ssd0", 2.0), ("lab1:hdd0", 2.0)]
