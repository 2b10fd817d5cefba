"""Confounds in a real browser: the walkthrough's comparison (device by mount options, the SSD's
runs with 8 clients for 12 s, the HDD's with 4 for 20 s) warns at the top and marks its verdicts;
campaign 5's page (a 15.18 build with 4 kB pages against Debian's packaged 15.20 with 8 kB) says
the page sizes come from different builds, above seed 001's table. Screenshots go to
test-artifacts/ and /tmp/shots-confounds/."""

import shutil
from pathlib import Path

import pytest

from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.compare.test_confounds import PAGE_SIZE_SENTENCE, make_campaign_5, make_mixed
from runs.tests.factories import make_host, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
SHOTS = Path("/tmp/shots-confounds")


def _shot(page: object, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)  # type: ignore[attr-defined]
    shutil.copy(ARTIFACTS / name, SHOTS / name)


def test_a_confounded_comparison_and_campaign_warn_at_the_top_and_mark_the_verdicts(page_server: str) -> None:
    runs = ",".join(str(run.pk) for run in make_mixed())
    campaign, _ = make_campaign_5(make_host(name="lab2", address="10.200.0.12"))
    make_user("vera", "viewer", password=PASSWORD)
    compared = f"/compare/?runs={runs}&group=device&group=mount_options"
    with signed_in(page_server, "vera", compared, height=900) as (page, violations, errors):
        _shot(page, "compare-confounded.png")
        warning_top = page.locator("#differs-warnings").bounding_box()
        statistics_top = page.locator("#statistics").bounding_box()
        warnings = page.locator("#differs-warnings li").all_text_contents()
        marker = page.locator("table[data-metric=steady_tps] tbody tr").nth(2).locator(".confounded")
        marker_text, marker_title = marker.text_content() or "", marker.get_attribute("title") or ""
        clients_said = " ".join((page.locator("#what-differs tr", has_text="clients").text_content() or "").split())

        page.goto(f"{page_server}/compare/print/?runs={runs}&group=device&group=mount_options")
        page.emulate_media(media="print")
        _shot(page, "compare-confounded-report.png")
        report_markers = page.locator("table[data-metric=steady_tps] .confounded").count()
        page.emulate_media(media="screen")

        page.goto(f"{page_server}/campaigns/{campaign.pk}/")
        _shot(page, "campaign-page-size-builds.png")
        campaign_warnings = page.locator("#differs-warnings li").all_text_contents()
        seed_table = page.locator("#results-table tbody tr").all_text_contents()
        campaign_marker = page.locator("#statistics .confounded").first.text_content() or ""

    assert warning_top and statistics_top and warning_top["y"] < statistics_top["y"]
    assert [w.split(" differs")[0] for w in warnings] == ["clients", "duration (s)"]
    assert marker_text == "⚠ confounded: clients 4 vs 8; duration (s) 20 vs 12"
    assert marker_title.startswith("Not only the grouping differs from the baseline: clients: 4 here")
    assert "differs between groups" in clients_said and "pooled" not in clients_said
    assert report_markers == 2
    assert campaign_warnings[0] == PAGE_SIZE_SENTENCE
    assert [" ".join(row.split()) for row in seed_table] == ["4 kB 1110.0 ± 10.0 1100.0 1110.0 1120.0",
                                                              "8 kB 1010.0 ± 10.0 1000.0 1010.0 1020.0"]  # fmt: skip
    assert campaign_marker.startswith("⚠ confounded: PostgreSQL version")
    assert not violations and not errors, violations + errors
