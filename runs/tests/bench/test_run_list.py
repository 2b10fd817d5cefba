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
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries

from runs.forms.run_filters import list_runs
from runs.models import Campaign, Device, Host, PgInstall, Run, RunClient, RunSample, RunState
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.web.test_input_junk import NUMBERS_THAT_BREAK_THINGS

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


def test_a_run_with_two_client_hosts_is_listed_once_under_each_of_them(lab: Lab, client_for: ClientFactory) -> None:
    lab3 = make_host(name="lab3", address="10.200.0.13")
    both = make_run(lab.lab1, lab.ssd, lab.pg15, client_hosts=[lab3, lab.lab2])
    client = client_for("vera")

    by_lab2 = client.get(reverse("runs"), {"host": lab.lab2.pk})
    by_lab3 = client.get(reverse("runs"), {"host": lab3.pk})
    by_server = client.get(reverse("runs"), {"host": lab.lab1.pk})

    assert sorted(listed(by_lab2.content)) == sorted([*names(lab, "elsewhere", "client"), both.pk])
    assert listed(by_lab3.content) == [both.pk]
    assert listed(by_server.content).count(both.pk) == 1  # its server and no join repeating it per client
    row = by_lab3.content.decode().split(f'<tr id="run-{both.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "<td>lab3, lab2</td>" in row


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
        "11 Mar 2025 is before Queued from (12 Mar 2025): no day is in between",
    ),
    "page size not offered": ({"per_page": "30"}, "Runs per page</strong>: must be one of 25, 50, 100, 200"),
    "page zero": ({"page": "0"}, "Page</strong>: must be a whole number from 1 to 1000000"),
    "a page past any list": ({"page": "1000001"}, "Page</strong>: must be a whole number from 1 to 1000000"),
    "a misspelt filter": ({"hots": "1"}, "Unknown parameter &#x27;hots&#x27;: the run list takes q, host, device,"),
    "a misspelt filter, with what the list takes": ({"srot": "tps"}, "campaign, tag, sort, per_page, page."),
    "a sort the list has not": (
        {"sort": "fastest"},
        "Sort by</strong>: must be one of queued, -started, started, -tps, tps, host, -host, state, -state (a "
        "leading - sorts the other way), or empty for the newest queued first",
    ),
    "the default sort spelt out": ({"sort": "-queued"}, "Sort by</strong>: must be one of queued, -started"),
    "a sort given twice": ({"sort": ["tps", "host"]}, "Sort by</strong>: is given more than once"),
    "a filter given twice": ({"state": ["done", "failed"]}, "State</strong>: is given more than once"),
    "mount options too long": ({"mount_options": "x" * 301}, "Mount options contain</strong>: Ensure this value"),
}


@pytest.mark.parametrize(
    ("query", "notice", "shown"),
    [
        ({"per_page": "25", "page": "9"}, "There is no page 9: these runs fill pages 1 to 2; this is the last.", 2),
        ({"page": "2"}, "There is no page 2: these runs fit on page 1, shown here.", 1),
        (
            {"state": "measuring", "page": "3"},
            "There is no page 3: there are no runs to show; this is page 1, empty.",
            0,
        ),
    ],
)
def test_a_page_past_the_end_shows_the_last_page_and_says_so(
    lab: Lab, client_for: ClientFactory, query: dict[str, str], notice: str, shown: int
) -> None:
    for _ in range(25):  # 30 runs: two pages of 25
        make_run(lab.lab1, lab.ssd, lab.pg15)

    response = client_for("vera").get(reverse("runs"), query)

    page = response.content.decode()
    assert response.status_code == 200
    assert f'<p class="warning-box" id="past-the-end" role="status">{notice}</p>' in page
    assert f"page {shown} of" in page or shown == 0
    assert len(listed(response.content)) == {2: 5, 1: 30, 0: 0}[shown]


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
                                       "per_page", "page", "state", "mount_options", "sort"])  # fmt: skip
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


def make_runs_on(
    device: Device, pg: PgInstall, count: int, start: datetime, client_host: Host | None = None, **fields: Any
) -> list[Run]:
    """`count` runs a minute apart from `start`, the last one newest (in one INSERT), each with
    client_host as its one client host if given."""
    runs = Run.objects.bulk_create(
        Run(server_host=device.host, device=device, pg_install=pg, **fields) for _ in range(count)
    )
    for minute, run in enumerate(runs):
        run.created_at = start + timedelta(minutes=minute)
    Run.objects.bulk_update(runs, ["created_at"])
    if client_host is not None:
        RunClient.objects.bulk_create(
            RunClient(run=run, host=client_host, position=1, database="bench") for run in runs
        )
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

    pages = [
        client.get(reverse("runs"), query).content.decode()
        for query in ({}, {"per_page": "25", "page": "2"}, {"state": "done"})
    ]

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
        client.get(reverse("runs"), {"host": lab.lab1.pk})  # four runs, one of them queued
    # Rows of every kind: queued ones (what they wait for), running ones (their second), finished.
    for state in (RunState.QUEUED, RunState.MEASURING, RunState.WARMING_UP, RunState.DONE):
        runs = make_runs(lab, 75, state=state, client_host=lab.lab2, queued_by=lab.otto, campaign=lab.campaign)
        if state in (RunState.MEASURING, RunState.WARMING_UP):
            RunSample.objects.bulk_create(
                RunSample(run=run, second=second, tps=100.0, latency_ms=1.0) for run in runs for second in (1, 2)
            )
    Host.objects.filter(pk=lab.lab1.pk).update(claimed_by=lab.runs["plain"])

    for sort in ("", "tps", "-started", "host", "state"):
        with django_assert_max_num_queries(len(few.captured_queries)):
            response = client.get(reverse("runs"), {"host": str(lab.lab1.pk), "per_page": "200", "sort": sort})

        assert len(listed(response.content)) == 200
        assert "second 2 of 60" in response.content.decode() and "busy with <a href=" in response.content.decode()


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
    assert len(run_queries) == 3  # the count, the page, and the queue (a queued run is on the page)
    # A note's beginning is read, never the note (runs.forms.run_filters.NOTE_SHOWN).
    run_queries = [re.sub(r'SUBSTRING\("runs_run"\."note", 1, 41\)', "", sql) for sql in run_queries]
    for field in heavy:
        assert not any(f'"runs_run"."{field}"' in sql for sql in run_queries), field


# ---- sorting ----


@pytest.fixture
def ranked(lab: Lab) -> dict[str, Run]:
    """Four more runs with a tps, a start and a state each, on both hosts; "tie" has plain's tps."""
    start = datetime(2025, 3, 20, 9, 0, tzinfo=UTC)
    extra = {
        "fast": make_run(lab.lab2, lab.hdd, lab.pg16, steady_tps_mean=900.0, started_at=start),
        "slow": make_run(lab.lab1, lab.ssd, lab.pg15, steady_tps_mean=100.0, started_at=start + timedelta(hours=2)),
        "tie": make_run(lab.lab1, lab.ssd, lab.pg15, steady_tps_mean=500.0, started_at=start + timedelta(hours=1)),
        "measuring": make_run(lab.lab2, lab.hdd, lab.pg16, state=RunState.MEASURING, started_at=start),
    }
    Run.objects.filter(pk=lab.runs["plain"].pk).update(steady_tps_mean=500.0, started_at=start - timedelta(days=9))
    for offset, run in enumerate(extra.values()):  # queued 15 to 18 March, after the lab's five
        Run.objects.filter(pk=run.pk).update(created_at=datetime(2025, 3, 15, 12, 0, tzinfo=UTC) + timedelta(offset))
    return lab.runs | extra


SORTS: dict[str, list[str]] = {
    # Queued: newest first by default, oldest first asked for.
    "": ["measuring", "tie", "slow", "fast", "campaign", "otto", "client", "elsewhere", "plain"],
    "queued": ["plain", "elsewhere", "client", "otto", "campaign", "fast", "slow", "tie", "measuring"],
    # No value (not started, no tps): last either way, newest queued first among them.
    "-started": ["slow", "tie", "measuring", "fast", "plain", "campaign", "otto", "client", "elsewhere"],
    "started": ["plain", "measuring", "fast", "tie", "slow", "campaign", "otto", "client", "elsewhere"],
    # The tie (500 tps) goes by the queue, newest first, whichever way tps goes.
    "-tps": ["fast", "tie", "plain", "slow", "measuring", "campaign", "otto", "client", "elsewhere"],
    "tps": ["slow", "tie", "plain", "fast", "measuring", "campaign", "otto", "client", "elsewhere"],
    "host": ["tie", "slow", "campaign", "otto", "client", "plain", "measuring", "fast", "elsewhere"],
    "-host": ["measuring", "fast", "elsewhere", "tie", "slow", "campaign", "otto", "client", "plain"],
    # In the order runs go through their states, not by the states' names.
    "state": ["campaign", "measuring", "tie", "slow", "fast", "otto", "elsewhere", "plain", "client"],
    "-state": ["client", "tie", "slow", "fast", "otto", "elsewhere", "plain", "measuring", "campaign"],
}


@pytest.mark.parametrize("case", SORTS.items(), ids=[sort or "default" for sort in SORTS])
def test_each_sort_orders_every_run_either_way_and_totally(
    ranked: dict[str, Run], client_for: ClientFactory, case: tuple[str, list[str]]
) -> None:
    sort, expected = case

    response = client_for("vera").get(reverse("runs"), {"sort": sort} if sort else {})

    assert response.status_code == 200
    assert listed(response.content) == [ranked[key].pk for key in expected]


def test_a_sort_is_kept_across_pages_and_filters_and_pages_never_share_a_run(
    lab: Lab, client_for: ClientFactory
) -> None:
    runs = make_runs(lab, 60, state=RunState.DONE, mount_options="discard", steady_tps_mean=100.0)  # all tied
    client = client_for("vera")
    query = {"mount_options": "discard", "sort": "-tps", "per_page": "25"}

    pages = [client.get(reverse("runs"), query | {"page": str(n)}).content.decode() for n in (1, 2, 3)]

    seen = [pk for page in pages for pk in listed(page.encode())]
    assert sorted(seen) == sorted(run.pk for run in runs)  # each run once: the ties broken the same way
    assert 'href="?mount_options=discard&amp;sort=-tps&amp;per_page=25&amp;page=2" rel="next"' in pages[0]
    assert '<option value="-tps" selected>highest tps first</option>' in pages[1]
    assert 'value="discard"' in pages[1]  # the filter, kept in the form beside the sort


def test_headers_sort_by_their_column_then_the_other_way_keeping_filters_and_back_at_page_one(
    lab: Lab, client_for: ClientFactory
) -> None:
    client = client_for("vera")

    default = client.get(reverse("runs"), {"state": "done", "per_page": "25"}).content.decode()
    by_tps = client.get(reverse("runs"), {"state": "done", "per_page": "25", "sort": "-tps", "page": "1"})

    header = re.compile(r'<th class="sortable[^"]*" aria-sort="(\w+)"><a href="([^"]*)" title="([^"]*)">([^<]*)<span')
    shown = {name.split()[0]: (sort, href, title) for sort, href, title, name in header.findall(default)}
    assert shown["Queued"] == ("descending", "?state=done&amp;per_page=25&amp;sort=queued", "Sort: oldest queued first")
    assert shown["tps"] == ("none", "?state=done&amp;per_page=25&amp;sort=-tps", "Sort: highest tps first")
    assert shown["State"][1] == "?state=done&amp;per_page=25&amp;sort=state"
    assert shown["Server"][1] == "?state=done&amp;per_page=25&amp;sort=host"
    assert shown["Started"][1] == "?state=done&amp;per_page=25&amp;sort=-started"
    tps = {name.split()[0]: (sort, href) for sort, href, _, name in header.findall(by_tps.content.decode())}
    assert tps["tps"] == ("descending", "?state=done&amp;per_page=25&amp;sort=tps")  # page 1 dropped
    assert tps["Queued"] == ("none", "?state=done&amp;per_page=25")  # the default: no sort in the URL


def test_only_the_newest_first_list_reloads_for_new_runs(lab: Lab, client_for: ClientFactory) -> None:
    page = client_for("vera").get(reverse("runs"), {"sort": "tps"}).content.decode()

    assert 'data-reload-on-new="false"' in page


# ---- what each row says ----


def test_a_row_says_who_queued_it_where_pgbench_ran_when_in_which_zone_and_its_steady_state_tps(
    lab: Lab, client_for: ClientFactory
) -> None:
    run = make_run(lab.lab1, lab.ssd, lab.pg15, client_host=lab.lab2, queued_by=lab.otto, scale=10, clients=8,
                   threads=2, duration_s=20, warmup_s=5, tps=1987.6, steady_tps_mean=2011.24,
                   started_at=datetime(2025, 7, 1, 12, 30, tzinfo=UTC))  # fmt: skip
    Run.objects.filter(pk=run.pk).update(created_at=datetime(2025, 7, 1, 12, 29, tzinfo=UTC))
    client = client_for("vera")

    page = client.get(reverse("runs")).content.decode()
    with override_settings(TIME_ZONE="Europe/Berlin"):
        berlin = client.get(reverse("runs")).content.decode()

    row = " ".join(page.split(f'<tr id="run-{run.pk}">', 1)[1].split("</tr>", 1)[0].split())
    assert "<td>lab1 · ssd0</td> <td>lab2</td>" in row
    assert "TPC-B like<br><small><span>scale 10</span> · <span>8 clients</span> · <span>2 threads</span> · " \
           "<span>5 s warm-up + 20 s</span></small>" in row  # fmt: skip
    assert '<td class="number" data-live="tps">2,011.2</td>' in row  # the steady-state mean, not 1987.6
    assert "<span>2025-07-01</span> <span>12:29 UTC</span></time><br><small>by otto" in row
    assert "<span>2025-07-01</span> <span>12:30 UTC</span>" in row
    assert "<span>2025-07-01</span> <span>14:29 CEST</span>" in berlin  # the reader's zone, named
    assert "steady-state mean</small>" in page and "warm-up left out" in page
    server_run = " ".join(page.split(f'<tr id="run-{lab.runs["plain"].pk}">', 1)[1].split("</tr>", 1)[0].split())
    assert '<td><span class="muted">server</span></td>' in server_run
    assert 'by <span class="muted">somebody no longer in benchlab</span>' in server_run


def state_cell(page: str, run: Run) -> str:
    cell = page.split(f'data-run="{run.pk}"', 1)[1].split("</td>", 1)[0]
    return re.sub(r"<[^>]+>", "", cell.split(">", 1)[1])


def test_a_running_row_says_which_second_of_its_phase_pgbench_is_in(lab: Lab, client_for: ClientFactory) -> None:
    fields = {"warmup_s": 5, "duration_s": 30}
    measuring = make_run(lab.lab1, lab.ssd, lab.pg15, state=RunState.MEASURING, **fields)
    warming = make_run(lab.lab2, lab.hdd, lab.pg16, state=RunState.WARMING_UP, **fields)
    just_measuring = make_run(lab.lab1, lab.ssd, lab.pg15, state=RunState.MEASURING, **fields)  # no sample after it
    preparing = make_run(lab.lab1, lab.ssd, lab.pg15, state=RunState.PREPARING_STORAGE, **fields)
    samples = [(measuring, range(1, 22)), (warming, range(1, 4)), (just_measuring, range(1, 6))]
    RunSample.objects.bulk_create(
        RunSample(run=run, second=second, tps=1.0, latency_ms=1.0) for run, seconds in samples for second in seconds
    )

    page = client_for("vera").get(reverse("runs")).content.decode()

    assert state_cell(page, measuring) == "measuring, second 16 of 30"
    assert state_cell(page, warming) == "warming up, second 3 of 5"
    assert state_cell(page, just_measuring) == "measuring, second 0 of 30"
    assert state_cell(page, preparing) == "preparing storage"
    assert f'data-run="{measuring.pk}" data-state="measuring" data-live="state" data-second="16" data-of="30"' in page


def test_a_queued_row_says_what_it_waits_for(lab: Lab, client_for: ClientFactory) -> None:
    lab3 = make_host(name="lab3", address="10.200.0.13")
    ssd3 = make_device(lab3, name="ssd3", path="/dev/disk/by-id/ata-TEST_SSD_3")
    pg3 = make_pg_install(lab3)
    running = make_run(lab.lab2, lab.hdd, lab.pg16, state=RunState.MEASURING)
    Host.objects.filter(pk=lab.lab2.pk).update(claimed_by=running)
    queued = {
        # lab1: the lab's queued run ("campaign") is first; then one using lab1 and lab2 as client.
        "both hosts": make_run(lab.lab1, lab.ssd, lab.pg15, state=RunState.QUEUED, client_host=lab.lab2),
        "behind both": make_run(lab.lab1, lab.ssd, lab.pg15, state=RunState.QUEUED),
        "on lab2": make_run(lab.lab2, lab.hdd, lab.pg16, state=RunState.QUEUED),
        "on lab3": make_run(lab3, ssd3, pg3, state=RunState.QUEUED),
    }
    client = client_for("vera")

    first = client.get(reverse("runs")).content.decode()
    Host.objects.filter(pk=lab3.pk).update(enabled=False, cleanup_pending_for=running)
    Host.objects.filter(pk=lab.lab1.pk).update(claimed_by=lab.runs["campaign"])  # it is starting
    second = client.get(reverse("runs")).content.decode()

    busy = f"lab2 busy with run {running.pk}"
    assert state_cell(first, lab.runs["campaign"]) == "queued: next in line"
    assert state_cell(first, queued["both hosts"]) == f"queued: {busy}; 1 run ahead"
    # lab1 is free: the first run ahead on it is named, and what it waits for (nothing: it starts next).
    assert state_cell(first, queued["behind both"]) == f"queued: lab1: 2 runs ahead of it, the first " \
                                                       f"(run {lab.runs['campaign'].pk}) next to start"  # fmt: skip
    assert state_cell(first, queued["on lab2"]) == f"queued: {busy}; 1 run ahead"
    assert state_cell(first, queued["on lab3"]) == "queued: next in line"
    assert state_cell(second, lab.runs["campaign"]) == "queued: starting: its hosts are claimed"
    assert state_cell(second, queued["both hosts"]) == f"queued: lab1 busy with run {lab.runs['campaign'].pk}; " \
                                                        f"{busy}; next in line"  # fmt: skip
    assert state_cell(second, queued["on lab3"]) == "queued: lab3 disabled; next in line"
