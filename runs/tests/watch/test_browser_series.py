"""A series in a real browser (chromium under Playwright, against uvicorn; no worker): a run's page
links to its configuration over time, whose page charts each metric per round with the step found
at round 7 and lab1's kernel change beside it, in the chart and in the change points' table; the
list of series names it. Screenshots go to test-artifacts/."""

import pytest

from runs.bench.specs import RunSpec
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user
from runs.tests.watch.history import make_history
from runs.tests.watch.pages import series_viewed
from runs.watch.series import series_key

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_a_run_leads_to_its_series_with_the_step_and_the_kernel_change(page_server: str) -> None:
    history = make_history(make_user("otto", "operator"))
    first = history.rounds[0][0]
    key = series_key(RunSpec.from_run(first))
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(page_server, "vera", f"/runs/{first.pk}/", height=1000) as (page, violations, errors):
        page.click("#run-series a")
        page.wait_for_selector("#series-chart-steady_tps canvas")
        page.wait_for_timeout(600)  # the charts' animation
        page.screenshot(path=str(ARTIFACTS / "series-detail.png"), full_page=True)
        url = page.url
        title = page.locator("#series-title").text_content() or ""
        row = page.locator("#change-steady_tps-7").text_content() or ""
        charts = page.locator("#series-figures figure").count()
        captions = page.locator("#series-figures figcaption").all_text_contents()
        drift = page.locator("#drift-events li").all_text_contents()
        rounds = page.locator("#round-table tbody tr").all_text_contents()
        first_links = page.locator("#round-table tbody tr >> nth=0 >> a").evaluate_all(
            "(a) => a.map((l) => l.pathname)"
        )
        drawn = page.evaluate(
            "() => { const c = Chart.getChart(document.querySelector('#series-chart-steady_tps canvas'));"
            " return [c.data.datasets[2].data.length, c.options.plugins.eventMarkers.markers.map(m => m.x)]; }"
        )
        page.goto(f"{page_server}/series/")
        page.screenshot(path=str(ARTIFACTS / "series-list.png"), full_page=True)
        listed = page.locator("#series-list tbody tr").all_text_contents()

    assert url.endswith(f"/series/{key}/")
    assert title.startswith("lab1 · lab1:ssd · ext4")
    assert "6 (" in row and "7 (" in row and "faster: +9.8 % (95 % CI +8.8 to +10.8 %)" in row
    assert "lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64 between round 6 and 7" in row
    assert charts == 2 and captions == ["tps (steady state) per round", "latency, mean per round"]
    assert drift == ["lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64 between round 6 and 7"]
    assert len(rounds) == 12 and rounds[1].startswith("2") and "a single run" in rounds[1]
    campaign_id, run_ids = first.campaign_id, [run.pk for run in history.rounds[0]]
    assert first_links == [f"/campaigns/{campaign_id}/", *(f"/runs/{pk}/" for pk in run_ids)]
    assert drawn == [12, [6.5, 6.5]]  # the change point and the kernel change, between rounds 6 and 7
    assert len(listed) == 1 and "12" in listed[0] and "lab1 · lab1:ssd" in listed[0]
    assert not violations and not errors, violations + errors


def test_a_kernel_changed_inside_a_round_is_drawn_and_said_during_that_round(page_server: str) -> None:
    # Review of issue 34: placed by the rounds' start times, it read "between round 7 and 8".
    history = make_history(make_user("otto", "operator"), new_kernel_from=(7, 1))
    key = series_key(RunSpec.from_run(history.rounds[0][0]))
    with series_viewed(page_server, key, "series-drift-during-round.png") as (page, violations, errors):
        drift = page.locator("#drift-events li").all_text_contents()
        markers = page.evaluate(
            "() => Chart.getChart(document.querySelector('#series-chart-steady_tps canvas'))"
            ".options.plugins.eventMarkers.markers.map(m => [m.x, m.label])"
        )

    said = "lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64"
    assert drift == [f"{said} during round 7"]
    assert [7, said] in markers  # on round 7, its label without the place (the axis says it)
    assert not violations and not errors, violations + errors
