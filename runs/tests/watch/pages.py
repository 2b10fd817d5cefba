"""A series' page as a viewer sees it in a real browser, for the watch's browser tests."""

from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Page

from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user


@contextmanager
def series_viewed(page_server: str, key: str, screenshot: str) -> Iterator[tuple[Page, list[str], list[str]]]:
    """Vera (a viewer, made here) on the series' page once its charts are drawn, screenshot taken
    (test-artifacts/<screenshot>): the page, CSP violations and page errors, as signed_in."""
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(page_server, "vera", f"/series/{key}/", height=1000) as (page, violations, errors):
        page.wait_for_selector("#series-figures canvas")
        page.wait_for_timeout(600)  # the charts' animation
        page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
        yield page, violations, errors
