"""The run list: filters (each, together, refused with a message), paging with a count, the
selection's markup, and a list query that stays small (constant queries, no per-run blobs)."""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import JSONField, TextField
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries

from runs.models import Campaign, Device, Host, PgInstall, Run, RunState
from runs.run_filters import list_runs
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.test_input_junk import NUMBERS_THAT_BREAK_THINGS

pytestmark = pytest.mark.django_db
HEAVY_FIELDS = {"summary", "metrics", "environment", "failed_output", "custom_script", "pg_settings"}
EN_DASH = "\N{EN DASH}"


@dataclass
class Lab:
    lab1: Host
    lab2: Host
    ssd: Device
    hdd: Device
    pg15: PgInstall
    pg16: PgInstall
    campaign: Campaign
    otto: User
    runs: dict[str, Run]


@pytest.fixture
def lab(users: dict[str, User]) -> Lab:
    """Five runs, each differing from `plain` in one thing a filter can pick out."""
    lab1 = make_host(name="lab1")
    lab2 = make_host(name="lab2", address="10.200.0.12")
    ssd = make_device(lab1, name="ssd0")
    hdd = make_device(lab2, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD_1")
    pg15 = make_pg_install(lab1)
    pg16 = make_pg_install(lab2, version="16.4", bin_dir="/usr/lib/postgresql/16/bin")
    campaign = Campaign.objects.create(name="mount options study", base_spec={})
    otto = users["otto"]
    runs = {
        "plain": make_run(lab1, ssd, pg15, mount_options="noatime"),
        "elsewhere": make_run(lab2, hdd, pg16, filesystem="xfs", workload="select-only", mount_options=""),
        "client": make_run(lab1, ssd, pg15, client_host=lab2, state=RunState.FAILED),
        "otto": make_run(lab1, ssd, pg15, queued_by=otto, mount_options="noatime,data=writeback"),
        "campaign": make_run(lab1, ssd, pg15, campaign=campaign, state=RunState.QUEUED),
    }
    day = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
    for offset, run in enumerate(runs.values()):  # one a day, 10 to 14 March
        Run.objects.filter(pk=run.pk).update(created_at=day + timedelta(days=offset))
    return Lab(lab1, lab2, ssd, hdd, pg15, pg16, campaign, otto, runs)


def listed(content: bytes) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr id="run-(\d+)"', content.decode())]


def names(lab: Lab, *keys: str) -> set[int]:
    return {lab.runs[key].pk for key in keys}


FILTERS: dict[str, tuple[Callable[[Lab], dict[str, Any]], set[str]]] = {
    "host, as server or as client": (lambda lab: {"host": lab.lab2.pk}, {"elsewhere", "client"}),
    "device": (lambda lab: {"device": lab.hdd.pk}, {"elsewhere"}),
    "filesystem": (lambda lab: {"filesystem": "xfs"}, {"elsewhere"}),
    "mount options contain": (lambda lab: {"mount_options": "NOATIME"}, {"plain", "otto"}),
    "PostgreSQL install": (lambda lab: {"pg_install": lab.pg16.pk}, {"elsewhere"}),
    "workload": (lambda lab: {"workload": "select-only"}, {"elsewhere"}),
    "state": (lambda lab: {"state": "failed"}, {"client"}),
    "queued by": (lambda lab: {"queued_by": lab.otto.pk}, {"otto"}),
    "from a day on": (lambda lab: {"date_from": "2025-03-13"}, {"otto", "campaign"}),
    "until a day, inclusive": (lambda lab: {"date_to": "2025-03-11"}, {"plain", "elsewhere"}),
    "one day": (lambda lab: {"date_from": "2025-03-12", "date_to": "2025-03-12"}, {"client"}),
    "campaign": (lambda lab: {"campaign": lab.campaign.pk}, {"campaign"}),
    "the widest range of days": (
        lambda lab: {"date_from": "0001-01-01", "date_to": "9999-12-31"},
        {"plain", "elsewhere", "client", "otto", "campaign"},
    ),
}


@pytest.mark.parametrize("case", FILTERS.values(), ids=FILTERS.keys())
def test_each_filter_lists_exactly_its_runs(
    lab: Lab, client_for: ClientFactory, case: tuple[Callable[[Lab], dict[str, Any]], set[str]]
) -> None:
    make_query, expected = case

    response = client_for("vera").get(reverse("runs"), make_query(lab))

    assert response.status_code == 200
    assert set(listed(response.content)) == names(lab, *expected)


def test_filters_combine_and_the_form_keeps_them_by_name(lab: Lab, client_for: ClientFactory) -> None:
    query = {"host": str(lab.lab1.pk), "mount_options": "noatime", "date_from": "2025-03-13", "state": "done"}

    response = client_for("vera").get(reverse("runs"), query)

    page = response.content.decode()
    assert listed(response.content) == [lab.runs["otto"].pk]
    assert f'<option value="{lab.lab1.pk}" selected>lab1</option>' in page
    assert 'value="noatime"' in page and 'value="2025-03-13"' in page
    assert '<option value="done" selected>done</option>' in page
    # The select lists show the inventory by name.
    for label in ("lab2:hdd0", "PostgreSQL 16.4 (8 kB pages) on lab2", "mount options study (#", ">otto</option>"):
        assert label in page, label


def test_no_filter_lists_every_run_newest_first(lab: Lab, client_for: ClientFactory) -> None:
    response = client_for("vera").get(reverse("runs"))

    keys = ["campaign", "otto", "client", "elsewhere", "plain"]
    assert listed(response.content) == [lab.runs[key].pk for key in keys]
    assert 'data-reload-on-new="true"' in response.content.decode()


def test_a_filtered_list_says_when_nothing_matches_and_does_not_reload_for_new_runs(
    lab: Lab, client_for: ClientFactory
) -> None:
    page = client_for("vera").get(reverse("runs"), {"device": str(lab.hdd.pk), "state": "queued"}).content.decode()

    assert "No run matches these filters." in page and "no runs" in page
    assert 'data-reload-on-new="false"' in page


BAD_FILTERS: dict[str, tuple[dict[str, str | list[str]], str]] = {
    "unknown host": ({"host": "999999"}, "Host (server or client)</strong>: no host has id 999999"),
    "a host that is no id": ({"host": "lab1"}, "must be the id of a host, a whole number"),
    "unknown device": ({"device": "999999"}, "Device</strong>: no device has id 999999"),
    "unknown install": ({"pg_install": "999999"}, "no PostgreSQL install has id 999999"),
    "unknown campaign": ({"campaign": "999999"}, "Campaign</strong>: no campaign has id 999999"),
    "a user who queued nothing": ({"queued_by": "999999"}, "no user who queued runs has id 999999"),
    "unknown filesystem": ({"filesystem": "zfs"}, "Filesystem</strong>: must be one of ext4, xfs, btrfs"),
    "unknown workload": ({"workload": "tpcc"}, "Workload</strong>: must be one of tpcb-like, simple-update"),
    "unknown state": ({"state": "running"}, "State</strong>: must be one of queued, preparing_storage"),
    "malformed day": ({"date_from": "2025-02-30"}, "Queued from</strong>: must be a day written YYYY-MM-DD"),
    "a day in another format": ({"date_to": "10/03/2025"}, "Queued until</strong>: must be a day written YYYY-MM"),
    "from after to": (
        {"date_from": "2025-03-12", "date_to": "2025-03-11"},
        "2025-03-11 is before Queued from (2025-03-12): no day is in between",
    ),
    "page size not offered": ({"per_page": "30"}, "Runs per page</strong>: must be one of 25, 50, 100, 200"),
    "page zero": ({"page": "0"}, "Page</strong>: must be a whole number from 1"),
    "page past the end": ({"page": "2"}, "there is no page 2: these runs fill pages 1 to 1"),
    "page past the end of nothing": (
        {"state": "measuring", "page": "3"},
        "there is no page 3: no run matches these filters",
    ),
    "a misspelt filter": ({"hots": "1"}, "Unknown parameter &#x27;hots&#x27;: the run list takes host, device,"),
    "a filter given twice": ({"state": ["done", "failed"]}, "State</strong>: is given more than once"),
    "mount options too long": ({"mount_options": "x" * 301}, "Mount options contain</strong>: Ensure this value"),
}


@pytest.mark.parametrize("case", BAD_FILTERS.values(), ids=BAD_FILTERS.keys())
def test_a_filter_that_cannot_be_applied_is_refused_with_what_is_allowed(
    lab: Lab, client_for: ClientFactory, case: tuple[dict[str, str | list[str]], str]
) -> None:
    query, message = case

    response = client_for("vera").get(reverse("runs"), query)

    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="filter-errors"' in page and message in page
    assert 'id="run-list"' not in page  # no runs shown as if the filter had been applied
    assert 'id="run-filters"' in page  # the form again, to correct it


@pytest.mark.parametrize("parameter", ["host", "device", "pg_install", "queued_by", "campaign", "date_from",
                                       "per_page", "page", "state", "mount_options"])  # fmt: skip
def test_numbers_that_break_things_are_answered_without_a_server_error(
    lab: Lab, client_for: ClientFactory, parameter: str
) -> None:
    client = client_for("vera")
    for value in NUMBERS_THAT_BREAK_THINGS:
        response = client.get(reverse("runs"), {parameter: value})

        assert response.status_code in (200, 400), f"{parameter}={value[:40]!r}: {response.status_code}"
        if response.status_code == 400:
            assert b'id="filter-errors"' in response.content or b"NUL character" in response.content


def make_runs(lab: Lab, count: int, **fields: Any) -> list[Run]:
    """`count` runs on lab1's SSD a minute apart from 1 April 2025, the last one newest."""
    return make_runs_on(lab.ssd, lab.pg15, count, datetime(2025, 4, 1, tzinfo=UTC), **fields)


def make_runs_on(device: Device, pg: PgInstall, count: int, start: datetime, **fields: Any) -> list[Run]:
    """`count` runs a minute apart from `start`, the last one newest (in one INSERT)."""
    runs = Run.objects.bulk_create(
        Run(server_host=device.host, device=device, pg_install=pg, **fields) for _ in range(count)
    )
    for minute, run in enumerate(runs):
        run.created_at = start + timedelta(minutes=minute)
    Run.objects.bulk_update(runs, ["created_at"])
    return runs


def test_pages_count_the_runs_and_keep_the_filters(lab: Lab, client_for: ClientFactory) -> None:
    runs = make_runs(lab, 120, state=RunState.DONE, mount_options="discard")
    newest_first = [run.pk for run in reversed(runs)]
    client = client_for("vera")
    query = {"mount_options": "discard"}

    first = client.get(reverse("runs"), query).content.decode()
    last = client.get(reverse("runs"), query | {"page": "3"}).content.decode()
    small = client.get(reverse("runs"), query | {"per_page": "25", "page": "5"}).content.decode()

    assert listed(first.encode()) == newest_first[:50]
    assert f"runs 1{EN_DASH}50 of 120" in first and "page 1 of 3" in first
    assert 'href="?mount_options=discard&amp;page=2" rel="next"' in first
    assert 'href="?mount_options=discard&amp;page=3" rel="last"' in first
    assert 'rel="prev"' not in first and 'rel="first"' not in first
    assert listed(last.encode()) == newest_first[100:]
    assert f"runs 101{EN_DASH}120 of 120" in last and 'rel="next"' not in last
    assert 'href="?mount_options=discard&amp;page=1" rel="first"' in last
    assert 'href="?mount_options=discard&amp;page=2" rel="prev"' in last
    assert listed(small.encode()) == newest_first[100:]
    assert f"runs 101{EN_DASH}120 of 120" in small and "page 5 of 5" in small
    assert 'href="?mount_options=discard&amp;per_page=25&amp;page=4" rel="prev"' in small
    assert '<option value="25" selected>25</option>' in small


def test_only_the_first_unfiltered_page_reloads_for_new_runs(lab: Lab, client_for: ClientFactory) -> None:
    make_runs(lab, 30)
    client = client_for("vera")

    pages = [client.get(reverse("runs"), query).content.decode() for query in ({}, {"page": "2"}, {"state": "done"})]

    assert ['data-reload-on-new="true"' in page for page in pages] == [True, False, False]


def test_every_row_can_be_selected_for_the_comparison(lab: Lab, client_for: ClientFactory) -> None:
    page = client_for("vera").get(reverse("runs")).content.decode()

    for run in lab.runs.values():
        assert f'<input type="checkbox" class="pick-run" value="{run.pk}"' in page
    assert 'id="select-page"' in page
    assert 'data-compare="/compare/"' in page
    assert re.search(r'<button type="button" id="compare-selected" disabled[^>]*>Compare selected', page)


def test_a_pages_query_count_does_not_grow_with_its_rows(
    lab: Lab, client_for: ClientFactory, django_assert_max_num_queries: DjangoAssertNumQueries
) -> None:
    client = client_for("vera")
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("runs"), {"host": lab.lab1.pk})  # four runs
    make_runs(lab, 300, client_host=lab.lab2, queued_by=lab.otto, campaign=lab.campaign)

    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get(reverse("runs"), {"host": str(lab.lab1.pk), "per_page": "200"})

    assert len(listed(response.content)) == 200


def test_the_list_query_loads_no_json_and_no_long_texts(lab: Lab, client_for: ClientFactory) -> None:
    with CaptureQueriesContext(connection) as queries:
        client_for("vera").get(reverse("runs"))
    run = list_runs().first()

    # Every JSON and long text field, whatever is added later, stays out of the list.
    heavy = {field.name for field in Run._meta.concrete_fields if isinstance(field, JSONField | TextField)}
    assert HEAVY_FIELDS <= heavy
    assert run is not None and heavy <= run.get_deferred_fields()
    # The runs' own queries; the users select list asks about runs only in a subquery (U0).
    run_queries = [
        query["sql"] for query in queries.captured_queries if re.search(r'FROM "runs_run"(?! U0)', query["sql"])
    ]
    assert len(run_queries) == 2  # the count and the page
    for field in heavy:
        assert not any(f'"runs_run"."{field}"' in sql for sql in run_queries), field
