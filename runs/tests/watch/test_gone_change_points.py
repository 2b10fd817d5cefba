"""Stored change points a later detection no longer finds (StoredChangePoint.gone_at): marked, never
deleted, their triage kept, found again once detection finds them; the regressions page and the API
leave them out unless asked; the page fifty a time, as the run list."""

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from runs.models import ChangePointState, Notification, Run, StoredChangePoint
from runs.tests.conftest import ClientFactory
from runs.tests.watch.history import ROUND_TPS, History, make_history
from runs.tests.web.test_api import api_client
from runs.watch.services.detect import watch_detect
from runs.watch.services.triage import change_point_triage

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(users: dict[str, User]) -> History:
    return make_history(users["otto"])


def flatten(history: History, tps: float | None = None) -> None:
    """Every round back at its first value (no step: detection finds nothing), or as made (`tps` None)."""
    for number, runs in enumerate(history.rounds):
        value = ROUND_TPS[0] if tps is not None else ROUND_TPS[number]
        spread = [value - 10, value, value + 10] if len(runs) == 3 else [value]
        for run, one in zip(runs, spread, strict=True):
            Run.objects.filter(pk=run.pk).update(steady_tps_mean=one, tps=one, latency_avg_ms=2000 / one)


def test_a_point_no_longer_found_is_marked_gone_kept_with_its_triage_and_found_again(
    history: History, users: dict[str, User]
) -> None:
    key = history.rounds[0][0].series_key
    assert key is not None and len(watch_detect(key).new) == 2
    tps = StoredChangePoint.objects.get(metric="steady_tps")
    change_point_triage(point=tps, state=ChangePointState.EXPECTED, note="new kernel", actor=users["otto"])

    flatten(history, tps=ROUND_TPS[0])
    missed = watch_detect(key)
    tps.refresh_from_db()
    assert (missed.stored, missed.new, missed.gone) == (0, [], 2)
    assert tps.gone_at is not None and (tps.state, tps.note) == (ChangePointState.EXPECTED, "new kernel")
    first_missed = tps.gone_at
    assert watch_detect(key).gone == 0  # already marked: its first missed time stays
    tps.refresh_from_db()
    assert tps.gone_at == first_missed and StoredChangePoint.objects.count() == 2

    flatten(history)
    told = Notification.objects.count()
    again = watch_detect(key)
    tps.refresh_from_db()
    assert (again.stored, again.new, again.gone) == (2, [], 0) and tps.gone_at is None
    assert tps.state == ChangePointState.EXPECTED and Notification.objects.count() == told  # not new: nobody told


def test_a_series_with_no_done_run_left_marks_its_points_gone(history: History) -> None:
    key = history.rounds[0][0].series_key
    assert key is not None
    watch_detect(key)
    Run.objects.filter(series_key=key).update(state="failed")
    assert watch_detect(key).gone == 2 and not StoredChangePoint.objects.filter(gone_at__isnull=True).exists()


def test_the_page_and_the_api_show_the_gone_ones_on_asking(
    history: History, users: dict[str, User], client_for: ClientFactory
) -> None:
    key = history.rounds[0][0].series_key
    assert key is not None
    watch_detect(key)
    tps = StoredChangePoint.objects.get(metric="steady_tps")
    gone_at = timezone.now().replace(year=2026, month=11, day=20, hour=2, minute=10)
    StoredChangePoint.objects.filter(pk=tps.pk).update(gone_at=gone_at)
    vera = client_for("vera")

    shown = vera.get(reverse("regressions")).content.decode()
    gone = vera.get(reverse("regressions"), {"found": "no"}).content.decode()
    either = vera.get(reverse("regressions"), {"found": "all", "state": "all"}).content.decode()
    bad = vera.get(reverse("regressions"), {"found": "maybe"})

    assert f'id="cp-{tps.pk}"' not in shown and shown.count('<tr id="cp-') == 1
    assert f'id="cp-{tps.pk}"' in gone and "no longer found since 2026-11-20 02:10 UTC" in gone
    assert gone.count('<tr id="cp-') == 1 and either.count('<tr id="cp-') == 2
    assert bad.status_code == 400 and "found must be one of yes, no, all" in bad.content.decode()
    api = api_client(users["vera"])
    listed = api.get("/api/change-points/").json()["results"]
    gone_rows = api.get("/api/change-points/", {"found": "no"}).json()["results"]
    assert [row["metric"] for row in listed] == ["latency_avg"] and listed[0]["gone_at"] is None
    assert [row["id"] for row in gone_rows] == [tps.pk] and gone_rows[0]["gone_at"] == gone_at.isoformat()
    assert len(api.get("/api/change-points/", {"found": "all"}).json()["results"]) == 2
    assert api.get("/api/change-points/", {"found": "maybe"}).status_code == 400
    series = vera.get(reverse("series-detail", args=[key])).content.decode()
    assert 'id="gone-' not in series  # the series page's reading finds it: shown beside it, not as gone


def test_the_series_page_lists_stored_points_its_reading_no_longer_finds(
    history: History, client_for: ClientFactory
) -> None:
    key = history.rounds[0][0].series_key
    assert key is not None
    watch_detect(key)
    flatten(history, tps=ROUND_TPS[0])
    watch_detect(key)
    tps = StoredChangePoint.objects.get(metric="steady_tps")
    page = client_for("vera").get(reverse("series-detail", args=[key])).content.decode()
    assert f'id="gone-{tps.pk}"' in page and "tps (steady state) between rounds 6 and 7: faster +9.8 %" in page
    assert f"no longer found since {tps.gone_at:%Y-%m-%d %H:%M} UTC" in page


def point(n: int, **fields: Any) -> StoredChangePoint:
    at = timezone.now() - timedelta(hours=n)
    numbers = dict(before_mean=1000.0, after_mean=1100.0, change=0.1, p=0.001, rounds_before=5, rounds_after=5)
    return StoredChangePoint(
        series_key=f"{n:016x}", metric="steady_tps", round_ref=f"r{n}", title=f"series {n}", round_before=5,
        round_after=6, comparison_url="/compare/", detected_at=at, **numbers, **fields,
    )  # fmt: skip


def test_the_page_shows_fifty_a_time_keeping_its_filters(client_for: ClientFactory) -> None:
    StoredChangePoint.objects.bulk_create([point(n) for n in range(1, 62)] + [point(99, state="expected")])
    vera = client_for("vera")
    first = vera.get(reverse("regressions"), {"state": "open"}).content.decode()
    second = vera.get(reverse("regressions"), {"state": "open", "page": "2"}).content.decode()
    past = vera.get(reverse("regressions"), {"state": "open", "page": "3"})
    junk = vera.get(reverse("regressions"), {"page": "x"})

    assert first.count('<tr id="cp-') == 50 and "series 1<" in first and "series 61<" not in first
    assert "change points 1–50 of 61" in first and 'href="?state=open&amp;page=2" rel="next"' in first
    assert second.count('<tr id="cp-') == 11 and "series 61<" in second and "page 2 of 2" in second
    said = "There is no page 3: these change points fill pages 1 to 2; this is the last."
    past_page = past.content.decode()
    assert past.status_code == 200 and f'<p class="warning-box" id="past-the-end" role="status">{said}</p>' in past_page
    assert past_page.count('<tr id="cp-') == 11 and "page 2 of 2" in past_page  # the last page, shown
    assert 'id="past-the-end"' not in second
    assert junk.status_code == 400 and "page must be a whole number from 1 to" in junk.content.decode()
    assert 'href="?state=all"' in second  # another filter starts again at its first page
