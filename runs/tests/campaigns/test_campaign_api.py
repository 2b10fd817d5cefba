"""The campaign API: preview, create, detail with the page's statistics, cancel, retry; bad
input refused with what is wrong and nothing written."""

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from runs.campaigns.selectors.results import campaign_runs, campaign_statistics
from runs.models import Campaign, Host, Run, RunState
from runs.tests.campaigns.test_campaigns import lab1
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db


def body(host: Host, **changes: object) -> dict[str, object]:
    ram, hdd = host.devices.get(name="ram"), host.devices.get(name="hdd")
    base = {"server_host": host.pk, "device": hdd.pk, "pg_install": host.pg_installs.get().pk, "filesystem": "ext4",
            "scale": 1, "clients": 2, "threads": 1, "duration_s": 5}  # fmt: skip
    data: dict[str, object] = {
        "name": "ram vs hdd",
        "base": base,
        "variables": [
            {"field": "device", "values": [ram.pk, hdd.pk]},
            {"field": "mount_options", "values": ["noatime", ""]},
        ],
        "repetitions": 3,
    }
    return data | changes


def test_a_preview_expands_and_estimates_without_queueing(users: dict[str, User]) -> None:
    host = lab1()

    response = api_client(users["otto"]).post("/api/campaigns/", body(host, preview=True), format="json")

    assert response.status_code == 200, response.json()
    answer = response.json()
    assert [c["label"] for c in answer["configurations"]] == [
        "lab1:ram · noatime", "lab1:ram · default mount options",
        "lab1:hdd · noatime", "lab1:hdd · default mount options",
    ]  # fmt: skip
    assert answer["runs"] == 12 and answer["estimated_wall_s"] > 0 and answer["refusal"] is None
    assert not Campaign.objects.exists()


def test_creating_queues_the_runs_and_the_detail_has_the_pages_statistics(users: dict[str, User]) -> None:
    host = lab1()
    client = api_client(users["otto"])

    created = client.post("/api/campaigns/", body(host), format="json")

    assert created.status_code == 201, created.json()
    campaign = Campaign.objects.get(pk=created.json()["id"])
    for run, tps in zip(Run.objects.filter(campaign=campaign).order_by("pk"), range(100, 112), strict=True):
        Run.objects.filter(pk=run.pk).update(state=RunState.DONE, steady_tps_mean=float(tps))
    detail = client.get(f"/api/campaigns/{campaign.pk}/?baseline=3").json()

    assert detail["progress"]["finished"] == 12 and detail["baseline"] == 3
    assert [len(c["runs"]) for c in detail["configurations"]] == [3, 3, 3, 3]
    page_table = campaign_statistics(campaign, campaign_runs(campaign), 3)[0]
    rows = detail["statistics"]["steady_tps"]["rows"]
    assert [row["summary"] for row in rows] == [row.summary.as_json() for row in page_table.rows]
    comparison = page_table.rows[0].comparison
    assert comparison is not None and rows[0]["comparison"] == comparison.as_json()
    assert rows[3]["comparison"] is None
    assert client.get(f"/api/campaigns/{campaign.pk}/?baseline=9").status_code == 400
    listed = client.get("/api/campaigns/").json()
    assert [c["id"] for c in listed["results"]] == [campaign.pk]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"repetitions": 0}, "repetitions", "greater than or equal to 1"),
        ({"variables": [{"field": "colour", "values": [1]}]}, "variables", "cannot be swept"),
        ({"base": {"server_host": 1}}, "base", "This field is required"),
        ({"seed": 3}, "seed", "shuffled order"),
        ({"variables": [{"field": "filesystem", "values": ["directory"]}]}, "variables", "No combination"),
    ],
)
def test_bad_input_says_what_is_wrong_and_writes_nothing(
    users: dict[str, User], changes: dict[str, object], field: str, message: str
) -> None:
    host = lab1()

    response = api_client(users["otto"]).post("/api/campaigns/", body(host, **changes), format="json")

    assert response.status_code == 400
    assert field in response.json() and message in str(response.json()[field])
    assert not Campaign.objects.exists() and not Run.objects.exists()


def test_cancel_and_retry_through_the_api(users: dict[str, User]) -> None:
    host = lab1()
    client = api_client(users["otto"])
    campaign_id = client.post("/api/campaigns/", body(host), format="json").json()["id"]

    one = client.post(f"/api/campaigns/{campaign_id}/cancel/", {"configuration": 1}, format="json")
    bad = client.post(f"/api/campaigns/{campaign_id}/cancel/", {"configuration": "1; drop"}, format="json")
    assert one.status_code == 200 and one.json()["cancelled"] == 3
    assert bad.status_code == 400 and "no configuration" in str(bad.json())

    Run.objects.filter(campaign_id=campaign_id, state=RunState.QUEUED).update(state=RunState.FAILED)
    retried = client.post(f"/api/campaigns/{campaign_id}/retry/", format="json")
    assert retried.status_code == 200 and retried.json()["queued"] == 9
    assert api_client(users["vera"]).post(f"/api/campaigns/{campaign_id}/cancel/", format="json").status_code == 403


# Three variables of 100 values each: a million combinations from a request of a few kB.
A_MILLION = [
    {"field": "scale", "values": list(range(1, 101))},
    {"field": "clients", "values": [str(n) for n in range(1, 101)]},
    {"field": "mount_options", "values": [f"commit={n}" for n in range(1, 101)]},
]
A_MILLION_REFUSED = "100 × 100 × 100 values make 1,000,000 combinations: a campaign's values may make at most 1,000"


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "create"])
def test_a_million_combinations_are_refused_by_their_count_before_any_is_expanded(
    users: dict[str, User], preview: bool
) -> None:
    host = lab1()

    response = api_client(users["otto"]).post(
        "/api/campaigns/", body(host, variables=A_MILLION, preview=preview), format="json"
    )

    assert response.status_code == 400
    assert A_MILLION_REFUSED in response.json()["variables"][0], response.json()
    assert not Campaign.objects.exists() and not Run.objects.exists()


def test_the_most_combinations_may_still_be_previewed(users: dict[str, User]) -> None:
    """1,000 combinations (10 by 100): expanded, their runnable ones counted against the 200 allowed."""
    host = lab1()
    variables = [{"field": "scale", "values": list(range(1, 11))}, A_MILLION[2]]

    response = api_client(users["otto"]).post(
        "/api/campaigns/", body(host, variables=variables, preview=True), format="json"
    )

    assert response.status_code == 200, response.json()
    assert len(response.json()["configurations"]) == 1000 and "at most 200" in response.json()["refusal"]


def test_a_body_larger_than_django_takes_is_refused_before_it_is_parsed(users: dict[str, User]) -> None:
    """DRF reads a JSON body through request.body, which Django caps at DATA_UPLOAD_MAX_MEMORY_SIZE."""
    host = lab1()
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    values = [f"commit={n}" for n in range(limit // 10)]  # more than `limit` bytes of JSON

    response = api_client(users["otto"]).post(
        "/api/campaigns/", body(host, variables=[{"field": "mount_options", "values": values}]), format="json"
    )

    assert response.status_code == 400
    assert not Campaign.objects.exists() and not Run.objects.exists()
