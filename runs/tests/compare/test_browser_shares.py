"""Share links in a real browser (Debian's chromium under Playwright, against uvicorn): a viewer
shares a comparison and a run from their pages, copies the link; a fresh browser with no account
opens both, read-only and without errors; after revoking, the link is gone. Screenshots go to
test-artifacts/."""

from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page

from runs.models import RunSample
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in, wait_until, watch_errors
from runs.tests.compare.test_shares import environment
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def make_runs() -> list[int]:
    """Two configurations (mount options) of two finished runs each, with per-second samples."""
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    ids = []
    for options, base in (("", 1000.0), ("noatime", 1250.0)):
        for repetition in range(2):
            tps = base + 20 * repetition
            run = make_run(host, device, pg, mount_options=options, steady_tps_mean=tps, tps=tps,
                           latency_avg_ms=2.0, warmup_s=2, duration_s=10, environment=environment())  # fmt: skip
            RunSample.objects.bulk_create(
                RunSample(run=run, second=s, tps=tps + (s % 3) * 10, latency_ms=2.0, warmup=s <= 2)
                for s in range(1, 11)
            )
            ids.append(run.pk)
    return ids


def create_share(page: Page, title: str, screenshot: str) -> str:
    """Fill the page's share form; the link shown once on the "my shares" page."""
    page.click("#share summary")
    page.fill("#share-title-input", title)
    page.fill("#share-expires", "7")
    page.locator("#share").screenshot(path=str(ARTIFACTS / f"{screenshot}.png"))
    page.click("#share-create")
    page.wait_for_selector("#new-share-url")
    return page.input_value("#new-share-url")


def test_a_viewer_shares_a_comparison_and_a_run_that_open_without_an_account(web_server: str) -> None:
    runs = make_runs()
    make_user("vera", "viewer", password=PASSWORD)
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    with chromium(height=1000) as (context, violations):
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=web_server)
        page = context.new_page()
        watch_errors(page, errors)
        log_in(page, web_server, "vera")
        page.goto(f"{web_server}/compare/?runs={','.join(map(str, runs))}&baseline=1")
        comparison_link = create_share(page, "noatime against the default", "share-form-comparison")
        page.click("#copy-share")
        wait_until(page, "document.getElementById('copy-status').textContent !== ''", timeout_ms=5_000)
        copied = (page.text_content("#copy-status"), page.evaluate("navigator.clipboard.readText()"))
        page.screenshot(path=str(ARTIFACTS / "share-created.png"), full_page=True)
        page.goto(f"{web_server}/runs/{runs[0]}/")
        run_link = create_share(page, "", "share-form-run")

        shared = open_logged_out(context, comparison_link, run_link, errors)

        page.goto(f"{web_server}/shares/")
        listing = page.text_content("#shares") or ""
        page.screenshot(path=str(ARTIFACTS / "share-list.png"), full_page=True)
        page.click("#shares tbody tr:last-child a.button")  # the oldest: the comparison's link; asks first
        page.wait_for_selector("#share-revoke")
        page.click("#share-revoke")
        page.wait_for_load_state()
        after_revoke = page.text_content("#shares") or ""
        before_404 = list(errors)  # the 404 itself is a console error ("failed to load resource")
        gone = shared["page"].goto(comparison_link)

    assert comparison_link.startswith(f"{web_server}/s/") and len(comparison_link.split("/")[-2]) >= 43
    assert copied == ("Copied.", comparison_link)
    assert "comparison of 4 runs" in listing and "noatime against the default" in listing and "live" in listing
    assert "revoked" in after_revoke
    assert gone is not None and gone.status == 404
    assert shared["nav"] == 0 and shared["controls"] == 0 and shared["share_forms"] == 0
    assert shared["run_links"] == 0, "a shared page links to a run's own page"
    assert "noatime against the default" in shared["heading"]
    assert shared["run_points"] == 10
    assert not violations, violations
    assert not before_404, before_404
    for name in ("share-created", "share-list", "shared-comparison", "shared-report", "shared-run", "share-form-run"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000, name


def open_logged_out(context: BrowserContext, comparison_link: str, run_link: str, errors: list[str]) -> dict[str, Any]:
    """Both links in a new browser context (no cookies: no account), with what the pages show."""
    browser = context.browser
    assert browser is not None
    fresh = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = fresh.new_page()
    watch_errors(page, errors)
    page.goto(comparison_link)
    wait_until(page, "document.body.dataset.chartsReady === 'true'", timeout_ms=30_000)
    seen: dict[str, Any] = {
        "page": page,
        "heading": page.text_content("h1") or "",
        "nav": page.locator("nav").count(),
        "controls": page.locator("#compare-controls").count(),
        "share_forms": page.locator("#share").count(),
        "run_links": page.locator("a[href*='/runs/']").count(),
    }
    page.screenshot(path=str(ARTIFACTS / "shared-comparison.png"), full_page=True)
    page.goto(f"{comparison_link}print/")
    wait_until(page, "document.body.dataset.chartsReady === 'true'", timeout_ms=30_000)
    page.screenshot(path=str(ARTIFACTS / "shared-report.png"), full_page=True)
    page.goto(run_link)
    wait_until(page, "window.benchlabCharts && window.benchlabCharts.tps.data.datasets[0].data.length > 0", 10_000)
    seen["run_points"] = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.length")
    seen["run_links"] += page.locator("a[href*='/runs/'], a[href*='/campaigns/'], a[href*='/outputs/']").count()
    seen["controls"] += page.locator(".actions, #cancel").count()
    page.screenshot(path=str(ARTIFACTS / "shared-run.png"), full_page=True)
    return seen
