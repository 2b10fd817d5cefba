"""The regressions page and its triage, the change points' API, and a schedule's subscribers on its
page and through the API (who may, what is refused and why, the secret shown once, failures shown)."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from runs.bench.specs import RunSpec
from runs.models import AuditEvent, ChangePointState, Notification, ScheduleSubscriber, StoredChangePoint
from runs.tests.conftest import ClientFactory
from runs.tests.schedules.test_rounds import nightly
from runs.tests.watch.history import History, make_history
from runs.tests.web.test_api import api_client
from runs.watch.series import series_key
from runs.watch.services.detect import watch_detect

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(users: dict[str, User]) -> History:
    found = make_history(users["otto"])
    watch_detect(series_key(RunSpec.from_run(found.rounds[0][0])))
    return found


def tps_point() -> StoredChangePoint:
    return StoredChangePoint.objects.get(metric="steady_tps")


def test_the_page_lists_open_change_points_with_their_links_in_few_queries(
    history: History, client_for: ClientFactory, django_assert_max_num_queries: Any
) -> None:
    vera = client_for("vera")
    with django_assert_max_num_queries(7):  # session, user, permissions (2), the change points and their count
        page = vera.get(reverse("regressions"))
    text = page.content.decode()
    point = tps_point()
    assert page.status_code == 200 and f'id="cp-{point.pk}"' in text
    assert "+9.8 % (95 % CI" in text and "6 → 7" in text and "kernel changed from 6.1.0-25-amd64" in text
    assert (
        point.comparison_url.replace("&", "&amp;") in text and reverse("series-detail", args=[point.series_key]) in text
    )
    assert "Mark expected" not in text  # a viewer sees, and may not triage
    StoredChangePoint.objects.update(state=ChangePointState.EXPECTED, note="new kernel")
    assert "No open change point." in vera.get(reverse("regressions")).content.decode()
    shown = vera.get(reverse("regressions") + "?state=all").content.decode()
    assert f'id="cp-{point.pk}"' in shown and "new kernel" in shown
    bad = vera.get(reverse("regressions") + "?state=closed")
    assert bad.status_code == 400 and "state must be one of open, acknowledged, expected, all" in bad.content.decode()


def test_the_series_page_shows_each_change_points_triage(history: History, client_for: ClientFactory) -> None:
    point = tps_point()
    StoredChangePoint.objects.filter(pk=point.pk).update(state=ChangePointState.EXPECTED, note="new kernel")
    page = client_for("vera").get(reverse("series-detail", args=[point.series_key])).content.decode()
    assert f'href="/regressions/?state=expected&amp;found=all#cp-{point.pk}">expected</a>: <q>new kernel</q>' in page
    assert page.count(">open</a>") == 1  # the latency one


def test_an_operator_triages_on_the_page_and_a_viewer_may_not(history: History, client_for: ClientFactory) -> None:
    point = tps_point()
    url = reverse("change-point-triage", args=[point.pk])
    assert client_for("vera").post(url, {"state": "acknowledged"}).status_code == 403
    otto = client_for("otto")
    done = otto.post(url, {"state": "acknowledged", "state_filter": "open"})
    assert done.status_code == 302 and done["Location"].endswith(f"?state=open#cp-{point.pk}")
    refused = otto.post(url, {"state": "expected", "note": "  "})
    assert refused.status_code == 400 and "needs a note saying why" in refused.content.decode()
    assert otto.post(url, {"state": "expected", "note": "firmware 2.1 applied"}).status_code == 302
    point.refresh_from_db()
    assert (point.state, point.note) == (ChangePointState.EXPECTED, "firmware 2.1 applied")
    assert AuditEvent.objects.filter(action="change_point_triaged").count() == 2


def test_the_api_lists_filters_and_triages(history: History, users: dict[str, User]) -> None:
    point = tps_point()
    listed = api_client(users["vera"]).get("/api/change-points/?state=open").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {row["metric"] for row in rows} == {"steady_tps", "latency_avg"}
    assert (
        api_client(users["vera"]).patch(f"/api/change-points/{point.pk}/", {"state": "acknowledged"}).status_code == 403
    )
    otto = api_client(users["otto"])
    bad = otto.patch(f"/api/change-points/{point.pk}/", {"state": "expected"}, format="json")
    assert bad.status_code == 400 and "needs a note" in bad.json()["note"]
    long = otto.patch(f"/api/change-points/{point.pk}/", {"state": "expected", "note": "x" * 501}, format="json")
    assert long.status_code == 400 and "500" in long.json()["note"][0]
    done = otto.patch(f"/api/change-points/{point.pk}/", {"state": "expected", "note": "new kernel"}, format="json")
    assert done.status_code == 200 and done.json()["state"] == "expected" and done.json()["triaged_by"] == "otto"
    rows = otto.get("/api/change-points/?state=open").json()
    assert [row["metric"] for row in (rows["results"] if isinstance(rows, dict) else rows)] == ["latency_avg"]
    assert otto.get("/api/change-points/?state=shut").status_code == 400


def test_subscribers_on_the_schedule_page_with_the_secret_shown_once(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    schedule = nightly(users["otto"])
    otto = client_for("otto")
    add = reverse("subscriber-add", args=[schedule.pk])
    bad = otto.post(add, {"webhook_url": "ftp://example.org/hook"})
    assert bad.status_code == 400 and "must be http:// or https:// with a host" in bad.content.decode()
    assert not ScheduleSubscriber.objects.exists()
    made = otto.post(add, {"email": "ops@example.org", "webhook_url": "https://hooks.example.org/b"})
    subscriber = ScheduleSubscriber.objects.get()
    assert made.status_code == 302 and made["Location"] == reverse("schedule-detail", args=[schedule.pk])
    assert subscriber.webhook_secret in otto.get(made["Location"]).content.decode()
    page = otto.get(reverse("schedule-detail", args=[schedule.pk])).content.decode()
    assert "https://hooks.example.org/b" in page and subscriber.webhook_secret not in page  # once
    assert client_for("vera").post(add, {"email": "v@example.org"}).status_code == 403
    Notification.objects.create(
        subscriber=subscriber, event="change_point", channel="webhook", target=subscriber.webhook_url,
        payload={}, attempts=3, last_error="Connection refused", next_attempt_at=timezone.now(),
    )  # fmt: skip
    page = otto.get(reverse("schedule-detail", args=[schedule.pk])).content.decode()
    assert "webhook to https://hooks.example.org/b failed 3 times: Connection refused (tried again at" in page
    removed = otto.post(reverse("subscriber-remove", args=[schedule.pk, subscriber.pk]))
    assert removed.status_code == 302 and not ScheduleSubscriber.objects.exists()


def test_subscribers_through_the_api(users: dict[str, User]) -> None:
    schedule = nightly(users["otto"])
    otto = api_client(users["otto"])
    made = otto.post(
        "/api/subscribers/", {"schedule": schedule.pk, "webhook_url": "http://127.0.0.1:9/h"}, format="json"
    )
    assert made.status_code == 201 and made.json()["webhook_secret"].startswith("whsec_")
    listed = otto.get(f"/api/subscribers/?schedule={schedule.pk}").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert len(rows) == 1 and "webhook_secret" not in rows[0]
    bad = otto.post("/api/subscribers/", {"schedule": schedule.pk, "email": "nobody"}, format="json")
    assert bad.status_code == 400 and "is not an email address" in bad.json()["email"]
    assert otto.post("/api/subscribers/", {"schedule": 999999}, format="json").json() == {
        "schedule": "no schedule 999999"
    }
    ada_made = api_client(users["vera"]).post("/api/subscribers/", {"schedule": schedule.pk, "email": "a@b.org"})
    assert ada_made.status_code == 403
    assert otto.delete(f"/api/subscribers/{made.json()['id']}/").status_code == 204
