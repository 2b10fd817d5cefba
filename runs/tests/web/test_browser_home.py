"""The home page, a control one cannot use and a share link's revoke confirmation in a real browser
(Debian's chromium under Playwright, against uvicorn). Screenshots go to test-artifacts/:
home-operator.png, home-viewer-empty.png, control-disabled.png, share-revoke-confirm.png."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.compare.services.shares import share_create
from runs.models import Host, Run, RunState, ShareKind, ShareLink
from runs.tests.browser import ARTIFACTS, signed_in
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.job_factories import make_build, make_campaign

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_an_operator_sees_their_runs_first_and_what_the_hosts_do(page_server: str) -> None:
    otto, ada = make_user("otto", "operator", password="a-long-browser-password"), make_user("ada", "admin")
    lab1, lab2 = make_host(), make_host(name="lab2", address="10.200.0.12")
    device, pg = make_device(lab1), make_pg_install(lab1)
    campaign, _ = make_campaign(otto, name="ram vs ssd")
    for n in range(3):
        make_run(lab1, device, pg, queued_by=otto, tps=1000 + 10 * n, campaign=campaign if n else None)
    make_run(lab1, device, pg, queued_by=ada, tps=990, state=RunState.FAILED)
    busy = make_run(lab1, device, pg, queued_by=otto, state=RunState.MEASURING, tps=None)
    Host.objects.filter(pk=lab1.pk).update(claimed_by=busy)
    make_run(lab1, device, pg, queued_by=ada, state=RunState.QUEUED, tps=None)
    make_build(lab2, ada)
    Run.objects.filter(state=RunState.DONE).update(created_at=timezone.now() - timedelta(hours=2))

    with signed_in(page_server, "otto", "/", height=1100) as (page, violations, errors):
        page.screenshot(path=str(ARTIFACTS / "home-operator.png"), full_page=True)
        mine = page.locator("#recent-runs-mine tbody tr").count()
        others = page.locator("#recent-runs-others tbody tr").count()
        lab1_now = page.text_content(f"#now-{lab1.pk}") or ""
        lab2_now = page.text_content(f"#now-{lab2.pk}") or ""

    assert (mine, others) == (4, 2)
    assert f"run {busy.pk}" in lab1_now and "1 queued" in lab1_now and "build" in lab2_now
    assert not violations and not errors, (violations, errors)


def test_a_viewer_on_an_empty_lab_and_a_control_she_cannot_use(page_server: str) -> None:
    make_user("vera", "viewer", password="a-long-browser-password")
    make_user("ada", "admin")

    with signed_in(page_server, "vera", "/", height=800) as (page, violations, errors):
        page.screenshot(path=str(ARTIFACTS / "home-viewer-empty.png"), full_page=True)
        steps = page.locator("#start li").count()
        said = page.text_content("#start-queue") or ""
        page.goto(page.url.rstrip("/") + "/campaigns/")
        page.locator("main").screenshot(path=str(ARTIFACTS / "control-disabled.png"))
        disabled = page.is_disabled("#campaign-new")
        described = page.get_attribute("#campaign-new", "aria-describedby")
        reason = page.text_content("#campaign-new-refusal") or ""

    assert steps == 3 and "ask ada for the operator role" in said
    assert disabled and described == "campaign-new-refusal"
    assert reason == "Operators start campaigns; you are a viewer (an admin gives roles)."
    assert not violations and not errors, (violations, errors)


def test_revoking_a_share_link_asks_first_with_its_use(page_server: str) -> None:
    otto = make_user("otto", "operator", password="a-long-browser-password")
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host))
    link, _ = share_create(kind=ShareKind.RUN, target=run, by=otto, title="for the vendor")
    ShareLink.objects.filter(pk=link.pk).update(views=3, last_viewed_at=timezone.now() - timedelta(hours=5))

    with signed_in(page_server, "otto", "/shares/", height=700) as (page, violations, errors):
        page.click(f"#share-{link.pk} a.button")
        page.wait_for_selector("#share-revoke")
        page.screenshot(path=str(ARTIFACTS / "share-revoke-confirm.png"), full_page=True)
        question = page.text_content("#revoke-question") or ""
        page.click("#share-revoke")
        page.wait_for_load_state()
        state = page.text_content(f"#share-{link.pk} .share-state") or ""

    assert f"This link to run {run.pk} has been opened 3 times, last on" in question
    assert state.startswith("revoked")
    assert not violations and not errors, (violations, errors)
