"""The API reference in a real browser (chromium under Playwright, against uvicorn): a viewer goes
from the API tokens page to the reference, finds the runs endpoints listed, follows a body to its
shape, and reads the schema; nothing is blocked by the Content-Security-Policy and nothing fails.
Screenshots: test-artifacts/api-reference-*.png."""

import json

import pytest

from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_a_viewer_finds_the_runs_endpoints_and_their_shapes_in_the_reference(page_server: str) -> None:
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(page_server, "vera", "/tokens/", height=900) as (page, violations, errors):
        page.click("#api-reference-link a:text('API reference')")
        page.wait_for_selector("#section-runs")
        title = page.title()
        runs = page.locator("#section-runs article h3").all_text_contents()
        page.screenshot(path=str(ARTIFACTS / "api-reference-top.png"))
        page.click("#section-runs a:text('RunRequest')")
        page.wait_for_url("**#shape-RunRequest")
        shape = page.text_content("#shape-RunRequest") or ""
        shape_visible = page.locator("#shape-RunRequest h3").is_visible()
        page.screenshot(path=str(ARTIFACTS / "api-reference-shape.png"))
        page.locator("#runs_create").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "api-reference-runs.png"))
        page.goto(f"{page_server}/api/schema/?format=json")
        schema = json.loads(page.locator("body").inner_text())

    assert title == "API reference · benchlab"
    assert [" ".join(heading.split()) for heading in runs] == [
        "GET /api/runs/",
        "POST /api/runs/",
        "GET /api/runs/{id}/",
        "POST /api/runs/{id}/cancel/",
        "POST /api/runs/{id}/notes/",
        "GET /api/runs/{id}/samples/",
        "POST /api/runs/import/",
    ]
    assert shape_visible and "client_hosts" in shape and "method_reason" in shape
    assert "/api/runs/" in schema["paths"] and schema["info"]["title"] == "benchlab API"
    assert not violations, violations
    assert not errors, errors
