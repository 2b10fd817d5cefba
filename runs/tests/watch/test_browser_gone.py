"""Change points no longer found, and the regressions page's pages, in a real browser (chromium under
Playwright, against uvicorn; no worker): the default list leaves the gone one out, "no longer found"
shows it with since when, triaging it keeps the filters, the pages walk fifty at a time; a series
whose step went away lists its stored points as no longer found. Screenshots go to test-artifacts/."""

from datetime import UTC, datetime

import pytest

from runs.models import StoredChangePoint
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user
from runs.tests.watch.history import ROUND_TPS, make_history
from runs.tests.watch.pages import series_viewed
from runs.tests.watch.test_gone_change_points import flatten, point
from runs.watch.services.detect import watch_detect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_the_gone_ones_on_asking_and_the_pages_of_the_list(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    history = make_history(otto)
    watch_detect(history.rounds[0][0].series_key or "")
    tps = StoredChangePoint.objects.get(metric="steady_tps")
    StoredChangePoint.objects.filter(pk=tps.pk).update(gone_at=datetime(2026, 11, 20, 2, 10, tzinfo=UTC))
    StoredChangePoint.objects.bulk_create([point(n) for n in range(100, 155)])  # 55 more open, still found
    with signed_in(page_server, "otto", "/regressions/", height=900) as (page, violations, errors):
        first = page.locator("#regressions tbody tr").count()
        summary = page.locator(".paging-summary >> nth=0").text_content() or ""
        page.click("nav.paging >> nth=0 >> text=Next ›")
        page.wait_for_selector("text=page 2 of 2")
        page.screenshot(path=str(ARTIFACTS / "regressions-page-2.png"), full_page=True)
        second = page.locator("#regressions tbody tr").count()
        page.click("#found-filters >> text=no longer found")
        page.wait_for_selector(f"#cp-{tps.pk}")
        gone_url = page.url
        gone_rows = page.locator("#regressions tbody tr").count()
        said = page.locator(f"#cp-{tps.pk} .cp-gone").text_content() or ""
        page.screenshot(path=str(ARTIFACTS / "regressions-no-longer-found.png"), full_page=True)
        page.click("#regression-filters >> text=all")
        page.wait_for_selector(f"#cp-{tps.pk}")
        page.click(f"#cp-{tps.pk} button[value=acknowledged]")
        page.wait_for_selector(f"#cp-{tps.pk}[data-state=acknowledged]")
        after_triage = page.url
        page.screenshot(path=str(ARTIFACTS / "regressions-gone-acknowledged.png"), full_page=True)

    assert first == 50 and summary == "change points 1–50 of 56" and second == 6
    assert "found=no" in gone_url and "page=" not in gone_url and gone_rows == 1
    assert said == "no longer found since 2026-11-20 02:10 UTC"
    assert "state=all" in after_triage and "found=no" in after_triage
    tps.refresh_from_db()
    assert tps.state == "acknowledged" and tps.gone_at is not None
    assert not violations and not errors, violations + errors


def test_a_series_whose_step_went_away_lists_its_stored_points_as_no_longer_found(page_server: str) -> None:
    history = make_history(make_user("otto", "operator"))
    key = history.rounds[0][0].series_key or ""
    watch_detect(key)
    flatten(history, tps=ROUND_TPS[0])
    watch_detect(key)
    tps = StoredChangePoint.objects.get(metric="steady_tps")
    with series_viewed(page_server, key, "series-no-longer-found.png") as (page, violations, errors):
        listed = page.locator("#gone-change-points li").all_text_contents()
        none_found = page.locator("#no-change-points").text_content() or ""
        page.click(f"#gone-{tps.pk} a")
        page.wait_for_selector(f"#cp-{tps.pk}")
        landed = page.url

    assert none_found == "No change point in any metric." and len(listed) == 2
    assert any("tps (steady state) between rounds 6 and 7: faster +9.8 %" in line for line in listed)
    assert all("no longer found since" in line for line in listed)
    assert landed.endswith(f"/regressions/?state=open&found=all#cp-{tps.pk}")
    assert not violations and not errors, violations + errors
