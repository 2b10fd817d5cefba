"""API tokens in a real browser (chromium under Playwright, against uvicorn; no worker): a viewer
finds the page from the header, is told what a bad name and expiry may be, makes a token that is
shown once and works on the API (a reload of that answer makes no second one), finds it listed by
name and first characters, and revokes it after a confirmation that names it. Screenshots:
test-artifacts/tokens-*.png."""

import urllib.error
import urllib.request

import pytest

from runs.models import AuditAction, AuditEvent
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def api_status(server: str, secret: str) -> int:
    """What the API answers the token, without the browser's session."""
    request = urllib.request.Request(f"{server}/api/hosts/", headers={"Authorization": f"Token {secret}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_viewer_makes_a_token_sees_it_once_and_revokes_it_after_confirming(page_server: str) -> None:
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(page_server, "vera", "/runs/", height=900) as (page, violations, errors):
        page.click("header a:text('API tokens')")
        page.wait_for_selector("#token-form")
        page.fill("#id_name", "")
        page.fill("#id_expires_days", "400")
        page.click("#token-create")
        page.wait_for_selector("#error-summary")
        refusal = page.text_content("#error-summary") or ""
        page.screenshot(path=str(ARTIFACTS / "tokens-refused.png"), full_page=True)
        page.fill("#id_name", "CI on build-7")
        page.fill("#id_expires_days", "30")
        page.click("#token-create")
        page.wait_for_selector("#new-token-secret")
        secret = page.input_value("#new-token-secret")
        shown = page.text_content("#new-token") or ""
        page.screenshot(path=str(ARTIFACTS / "tokens-created.png"), full_page=True)
        works = api_status(page_server, secret)
        page.reload()  # the browser sends the form again: no second token, a notice
        page.wait_for_selector("#token-resent")
        resent = page.text_content("#token-resent") or ""
        page.screenshot(path=str(ARTIFACTS / "tokens-resent.png"), full_page=True)
        page.goto(f"{page_server}/tokens/")
        listed = page.locator("#tokens tbody tr").all_text_contents()
        shown_again = secret in page.content()
        page.screenshot(path=str(ARTIFACTS / "tokens-list.png"), full_page=True)
        page.click("#tokens tbody tr a:text('Revoke…')")
        page.wait_for_selector("#token-revoke")
        question = page.text_content("main") or ""
        still_works = api_status(page_server, secret)
        page.screenshot(path=str(ARTIFACTS / "tokens-revoke-confirm.png"), full_page=True)
        page.click("#token-revoke")
        page.wait_for_selector(".messages")
        after = page.text_content("main") or ""
        page.screenshot(path=str(ARTIFACTS / "tokens-revoked.png"), full_page=True)
        revoked = api_status(page_server, secret)

    assert "No token was made." in refusal and "needs a name (1 to 100 characters)" in refusal
    assert "whole number of days from 1 to 365, or blank" in refusal
    assert len(secret) == 64 and "Copy it now: it is shown only this once." in shown and works == 200
    assert "This form was sent already (the page was reloaded): no second token was made." in " ".join(resent.split())
    assert not shown_again and len(listed) == 1
    assert "CI on build-7" in listed[0] and f"{secret[:15]}…" in listed[0]
    assert "Revoke API token “CI on build-7”?" in question and f"{secret[:15]}…" in question and still_works == 200
    assert f"API token “CI on build-7” ({secret[:15]}…) of vera revoked" in after and "No API tokens yet." in after
    assert revoked == 401
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions == [AuditAction.API_TOKEN_CREATED, AuditAction.API_TOKEN_REVOKED]
    # The refused form, answered 400, and the form sent again, answered 409.
    assert len(errors) == 2 and "400 from" in errors[0] and "409 from" in errors[1], errors
    assert not violations, violations
