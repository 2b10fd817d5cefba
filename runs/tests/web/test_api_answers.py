"""The answers the API builds by hand (campaigns, schedules, comparisons, change points,
subscribers) are what its OpenAPI schema says, key for key: a key added to an answer and not to its
shape in runs/api/shapes/, or a shape's field the answer lacks, fails here."""

import jsonschema  # type: ignore[import-untyped]  # no stubs in the pinned dependencies
import pytest
from django.contrib.auth.models import User

from runs.models import Campaign, Host, Run, RunState
from runs.tests.api_schema import assert_answers_as_documented
from runs.tests.campaigns.test_campaign_api import body
from runs.tests.campaigns.test_campaigns import lab1
from runs.tests.job_factories import make_change_point
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db


def a_finished_campaign(otto: User, host: Host | None = None) -> Campaign:
    """Four configurations of three runs each, done with made-up steady tps."""
    created = api_client(otto).post("/api/campaigns/", body(host or lab1()), format="json")
    assert created.status_code == 201, created.json()
    assert_answers_as_documented("/api/campaigns/", "post", 201, created.json())
    campaign = Campaign.objects.get(pk=created.json()["id"])
    for run, tps in zip(Run.objects.filter(campaign=campaign).order_by("pk"), range(100, 112), strict=True):
        Run.objects.filter(pk=run.pk).update(state=RunState.DONE, steady_tps_mean=float(tps), tps=float(tps))
    return campaign


def test_campaign_answers_are_as_documented(users: dict[str, User]) -> None:
    client = api_client(users["otto"])
    host = lab1()
    preview = client.post("/api/campaigns/", body(host, preview=True), format="json")
    campaign = a_finished_campaign(users["otto"], host)
    Run.objects.filter(campaign=campaign).update(state=RunState.FAILED)

    answers = {
        ("/api/campaigns/", "post", 200): preview,
        ("/api/campaigns/", "get", 200): client.get("/api/campaigns/"),
        ("/api/campaigns/{id}/", "get", 200): client.get(f"/api/campaigns/{campaign.pk}/?baseline=1"),
        ("/api/campaigns/{id}/comparison/", "get", 200): client.get(f"/api/campaigns/{campaign.pk}/comparison/"),
        ("/api/campaigns/{id}/retry/", "post", 200): client.post(f"/api/campaigns/{campaign.pk}/retry/"),
        ("/api/campaigns/{id}/cancel/", "post", 200): client.post(
            f"/api/campaigns/{campaign.pk}/cancel/", {"configuration": 0}, format="json"
        ),
    }

    for (path, method, status), response in answers.items():
        assert response.status_code == status, (path, response.json())
        assert_answers_as_documented(path, method, status, response.json())


def test_comparison_answers_are_as_documented(users: dict[str, User]) -> None:
    campaign = a_finished_campaign(users["otto"])
    client = api_client(users["vera"])
    query = {"campaign": campaign.pk, "group": "device"}

    for path in ("/api/comparisons/", "/api/comparisons/summary/", "/api/comparisons/series/"):
        response = client.get(path, query)
        assert response.status_code == 200, (path, response.json())
        assert_answers_as_documented(path, "get", 200, response.json())


def test_schedule_and_subscriber_answers_are_as_documented(users: dict[str, User]) -> None:
    client = api_client(users["otto"])
    campaign = a_finished_campaign(users["otto"])
    created = client.post("/api/schedules/", {"campaign": campaign.pk, "name": "nightly", "preset": "mondays"})
    schedule = created.json()["id"]
    subscribed = client.post("/api/subscribers/", {"schedule": schedule, "webhook_url": "https://hooks.example.org/b"})

    answers = {
        ("/api/schedules/", "post", 201): created,
        ("/api/schedules/", "get", 200): client.get("/api/schedules/"),
        ("/api/schedules/{id}/run-now/", "post", 200): client.post(f"/api/schedules/{schedule}/run-now/"),
        ("/api/schedules/{id}/", "get", 200): client.get(f"/api/schedules/{schedule}/"),
        ("/api/schedules/{id}/", "patch", 200): client.patch(f"/api/schedules/{schedule}/", {"enabled": False}),
        ("/api/subscribers/", "post", 201): subscribed,
        ("/api/subscribers/", "get", 200): api_client(users["vera"]).get("/api/subscribers/"),
        ("/api/subscribers/{id}/", "get", 200): client.get(f"/api/subscribers/{subscribed.json()['id']}/"),
    }

    for (path, method, status), response in answers.items():
        assert response.status_code == status, (path, response.json())
        assert_answers_as_documented(path, method, status, response.json())
    assert "webhook_secret" in subscribed.json()  # the optional field the schema names, there this once


def test_change_point_answers_are_as_documented(users: dict[str, User]) -> None:
    point = make_change_point(drift="lab1: kernel changed")
    client = api_client(users["otto"])

    answers = {
        ("/api/change-points/", "get", 200): client.get("/api/change-points/"),
        ("/api/change-points/{id}/", "get", 200): client.get(f"/api/change-points/{point.pk}/"),
        ("/api/change-points/{id}/", "patch", 200): client.patch(
            f"/api/change-points/{point.pk}/", {"state": "acknowledged", "note": "seen"}
        ),
    }

    for (path, method, status), response in answers.items():
        assert response.status_code == status, (path, response.json())
        assert_answers_as_documented(path, method, status, response.json())


def test_an_answer_with_a_key_its_shape_lacks_or_without_one_it_names_fails_the_check(users: dict[str, User]) -> None:
    point = make_change_point()
    answer = api_client(users["vera"]).get(f"/api/change-points/{point.pk}/").json()
    path = "/api/change-points/{id}/"

    assert_answers_as_documented(path, "get", 200, answer)
    with pytest.raises(jsonschema.ValidationError, match="'surprise' was unexpected"):
        assert_answers_as_documented(path, "get", 200, answer | {"surprise": 1})
    with pytest.raises(jsonschema.ValidationError, match="'note' is a required property"):
        assert_answers_as_documented(path, "get", 200, {key: value for key, value in answer.items() if key != "note"})
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'integer'"):
        assert_answers_as_documented(path, "get", 200, answer | {"round_after": "6"})
