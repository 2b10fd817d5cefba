"""One filter definition (runs.bench.filters.RunFilter) for the run list page, the API, the
comparisons and their exports: each filter picks the same runs everywhere; every API list refuses
a parameter it does not read, naming what it takes; a run's API detail names its campaign and
configuration."""

import csv
import io
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse

from runs.api.urls import router
from runs.models import Campaign, CampaignConfiguration, Run, RunOrigin
from runs.tests.bench import test_run_list
from runs.tests.bench.test_run_list import FILTERS, Lab, listed, names
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_user
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db
lab = test_run_list.lab  # the run list's five runs, each with one thing a filter picks out

Case = tuple[Callable[[Lab], dict[str, Any]], set[str]]


def _api_ids(response: Any) -> set[int]:
    assert response.status_code == 200, response.json()
    return {row["id"] for row in response.json()["results"]}


def _compared_ids(response: Any) -> set[int]:
    assert response.status_code == 200, response.json()
    return {pk for group in response.json()["groups"] for pk in group["runs"]}


@pytest.mark.parametrize("case", FILTERS.values(), ids=FILTERS.keys())
def test_each_filter_picks_the_same_runs_on_the_page_in_the_api_and_in_a_comparison(
    lab: Lab, client_for: ClientFactory, case: Case
) -> None:
    make_query, expected = case
    query = make_query(lab)
    api = api_client(make_user("vic", "viewer"))

    page = set(listed(client_for("vera").get(reverse("runs"), query).content))
    listed_by_api = _api_ids(api.get("/api/runs/", query))
    compared = _compared_ids(api.get("/api/comparisons/", query))

    assert page == listed_by_api == compared == names(lab, *expected)


def test_the_comparison_export_takes_the_filters_too(lab: Lab, client_for: ClientFactory) -> None:
    response = client_for("vera").get(reverse("compare-export-csv"), {"what": "series", "filesystem": "xfs"})

    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))  # type: ignore[attr-defined]
    assert {int(row["run"]) for row in rows} <= names(lab, "elsewhere")


def test_a_comparison_by_filters_says_so_and_is_shared_by_its_runs(lab: Lab, client_for: ClientFactory) -> None:
    response = client_for("vera").get(reverse("compare"), {"mount_options": "noatime"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "Comparison of 2 runs listed by mount_options=noatime" in page
    share = page[page.index('id="share"') :]
    share = share[: share.index("</form>")]
    pinned = ",".join(str(pk) for pk in sorted(names(lab, "plain", "otto")))
    assert f'name="runs" value="{pinned}"' in share and "mount_options" not in share


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"device": "x"}, "device: must be the id of a device, a whole number; pick one from the list"),
        ({"filesystem": "fat32"}, "filesystem: must be one of ext4"),
        ({"date_from": "2025-03-12", "date_to": "2025-03-11"}, "date_to: 11 Mar 2025 is before Queued from"),
        ({"filesystem": "tmpfs"}, "no run matches these filters"),
        ({"runs": "1", "filesystem": "xfs"}, "give runs, or a campaign and filters, not both"),
    ],
)
def test_a_comparison_refuses_filters_it_cannot_use_in_the_run_lists_words(
    lab: Lab, query: dict[str, str], said: str
) -> None:
    response = api_client(make_user("vic", "viewer")).get("/api/comparisons/", query)

    assert response.status_code == 400
    assert said in response.json()["detail"]


def _list_urls() -> list[str]:
    return [f"/api/{prefix}/" for prefix, _, _ in router.registry]


@pytest.mark.parametrize("url", _list_urls())
def test_every_api_list_refuses_a_parameter_it_does_not_read_and_names_what_it_takes(url: str) -> None:
    paged = url != "/api/comparisons/"  # a comparison is one answer, not a list of pages
    response = api_client(make_user("ada", "admin")).get(url, {"campaing": "1"} | ({"limit": "5"} if paged else {}))

    assert response.status_code == 400, (url, response.status_code)
    said = response.json()["detail"]
    assert said.startswith(f"Unknown parameter 'campaing': {url} takes "), said
    assert said.endswith("limit, offset." if paged else "date_to, tag."), said


def test_the_run_lists_parameters_are_named_in_the_refusal_and_paging_goes_with_filters(lab: Lab) -> None:
    api = api_client(make_user("vic", "viewer"))

    refused = api.get("/api/runs/", {"server_host": lab.lab2.pk})
    paged = api.get("/api/runs/", {"mount_options": "noatime", "limit": 1, "offset": 1})

    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "Unknown parameter 'server_host': /api/runs/ takes q, host, device, filesystem, mount_options, pg_install, "
        "driver, workload, state, origin, queued_by, date_from, date_to, campaign, tag, limit, offset."
    )
    assert paged.json()["count"] == 2 and len(paged.json()["results"]) == 1


def test_a_filter_given_twice_is_refused_not_half_applied(lab: Lab) -> None:
    response = api_client(make_user("vic", "viewer")).get(
        f"/api/runs/?filesystem=xfs&filesystem=ext4&host={lab.lab1.pk}"
    )

    assert response.status_code == 400
    assert response.json() == {"filesystem": ["is given more than once; give it once"]}


def test_a_runs_api_detail_names_its_campaign_and_configuration(lab: Lab) -> None:
    run = lab.runs["campaign"]
    configuration = CampaignConfiguration.objects.create(
        campaign=lab.campaign, index=1, label="ext4 · noatime", values={"mount options": "noatime"}, spec={}
    )
    Run.objects.filter(pk=run.pk).update(configuration=configuration, repetition=3, series_key="0123456789abcdef")
    api = api_client(make_user("vic", "viewer"))

    detail = api.get(f"/api/runs/{run.pk}/").json()
    in_list = next(row for row in _list(api, lab.campaign) if row["id"] == run.pk)

    named = (detail["campaign"], detail["campaign_name"], detail["repetition"])
    assert named == (lab.campaign.pk, lab.campaign.name, 3)
    assert detail["configuration"] == {"index": 1, "label": "ext4 · noatime", "values": {"mount options": "noatime"}}
    assert detail["configuration_key"] == in_list["configuration_key"] == "0123456789abcdef"
    alone = api.get(f"/api/runs/{lab.runs['plain'].pk}/").json()
    assert (alone["campaign"], alone["campaign_name"], alone["configuration"]) == (None, None, None)


def _list(api: Any, campaign: Campaign) -> list[dict[str, Any]]:
    return api.get("/api/runs/", {"campaign": campaign.pk}).json()["results"]


def test_the_run_list_offers_to_compare_what_its_filters_list(lab: Lab, client_for: ClientFactory) -> None:
    client = client_for("vera")

    filtered = client.get(reverse("runs"), {"mount_options": "noatime", "sort": "tps", "page": "1"}).content.decode()
    unfiltered = client.get(reverse("runs")).content.decode()

    link = filtered[filtered.index('id="compare-filtered"') :]
    href = link[link.index('href="') + 6 : link.index('">')]
    assert href == reverse("compare") + "?mount_options=noatime"  # the filters, not the sort or the page
    assert "Compare the 2 runs these filters list" in link
    assert 'id="compare-filtered"' not in unfiltered
    compared = client.get(href.replace("&amp;", "&"))
    assert compared.status_code == 200 and "Comparison of 2 runs" in compared.content.decode()


def test_imported_runs_are_picked_out_by_origin_everywhere(lab: Lab, client_for: ClientFactory) -> None:
    imported = lab.runs["elsewhere"]
    Run.objects.filter(pk=imported.pk).update(origin=RunOrigin.IMPORTED)
    api = api_client(make_user("vic", "viewer"))

    page = set(listed(client_for("vera").get(reverse("runs"), {"origin": "imported"}).content))
    measured = _api_ids(api.get("/api/runs/", {"origin": "measured"}))
    bad = api.get("/api/runs/", {"origin": "uploaded"})

    assert page == {imported.pk}
    assert measured == names(lab, "plain", "client", "otto", "campaign")
    assert bad.status_code == 400 and bad.json() == {"origin": ["must be one of measured, imported"]}
