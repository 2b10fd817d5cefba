"""Notes and tags in a real browser (chromium under Playwright, against uvicorn; no worker): the
operator who queued a run writes a note and tags, is told what a tag may hold, sees them on the
run's page and in the run list, follows a tag to the runs that carry it; a viewer sees the edit
button disabled with the reason. Screenshots: test-artifacts/notes-*.png."""

import pytest

from runs.models import Campaign, Run
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_the_owner_notes_and_tags_a_run_and_a_viewer_is_told_why_she_cannot(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    make_user("vera", "viewer", password=PASSWORD)
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    campaign = Campaign.objects.create(name="firmware study", base_spec={}, created_by=otto, tags=["fw-study"])
    run = make_run(host, device, pg, queued_by=otto, campaign=campaign, tps=1234.5)
    other = make_run(host, device, pg, queued_by=otto, tps=999.0)
    with signed_in(page_server, "otto", f"/runs/{run.pk}/", height=900) as (page, violations, errors):
        page.click("#notes-edit")
        page.wait_for_selector("#notes-form")
        page.fill("#id_note", "After firmware 2.1: the drive's write cache is on.")
        page.fill("#id_tags", "firmware-2.1, Nightly, b@d")
        page.click("#notes-save")
        page.wait_for_selector("#error-summary")
        refusal = page.text_content("#error-summary") or ""
        page.screenshot(path=str(ARTIFACTS / "notes-refused.png"), full_page=True)
        page.fill("#id_tags", "firmware-2.1, Nightly")
        page.click("#notes-save")
        page.wait_for_url(f"**/runs/{run.pk}/#notes")
        shown = (page.text_content("#note-text"), page.locator("#notes a.tag").all_text_contents())
        page.screenshot(path=str(ARTIFACTS / "notes-run-page.png"), full_page=True)
        page.click("#notes a.tag:text('nightly')")
        page.wait_for_url("**/runs/?tag=nightly")
        listed = page.locator("#run-list tbody tr").evaluate_all("rows => rows.map(r => r.id)")
        page.goto(f"{page_server}/runs/?q=write+cache")
        searched = page.locator("#run-list tbody tr").evaluate_all("rows => rows.map(r => r.id)")
        page.screenshot(path=str(ARTIFACTS / "notes-run-list.png"), full_page=True)
    with signed_in(page_server, "vera", f"/runs/{run.pk}/", height=900) as (page, viewer_violations, _):
        disabled = page.is_disabled("#notes-edit")
        why = page.text_content("#notes-edit-refusal") or ""
        page.screenshot(path=str(ARTIFACTS / "notes-viewer.png"), full_page=True)

    assert "the tag 'b@d' may hold only lowercase letters" in refusal
    assert shown == ("After firmware 2.1: the drive's write cache is on.", ["firmware-2.1", "nightly"])
    assert listed == [f"run-{run.pk}"] and searched == [f"run-{run.pk}"]
    assert Run.objects.get(pk=other.pk).tags == []
    assert disabled and why.startswith("To annotate runs needs the operator role; you are a viewer"), why
    assert not violations and not viewer_violations, (violations, viewer_violations)
    assert len(errors) == 1 and "/notes: 400 from" in errors[0], errors  # the refused form, answered 400
