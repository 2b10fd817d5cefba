"""A lab host that did not answer at a job's start, in a real browser: its page says so (since
when, the last error), and a run queued for it says why it waits and why it went back to queued.
Screenshots go to test-artifacts/."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.jobs.transitions import run_transition
from runs.models import Host, RunState
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
ERROR = "cannot connect to root@10.200.0.11: [Errno 113] No route to host"


def test_an_unreachable_host_and_the_run_waiting_for_it_say_since_when_and_why(page_server: str) -> None:
    host = make_host(name="lab1")
    since = timezone.now() - timedelta(minutes=3)
    Host.objects.filter(pk=host.pk).update(
        unreachable_since=since, unreachable_error=ERROR, unreachable_retry_at=timezone.now() + timedelta(minutes=2)
    )
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    note = f"lab1 did not answer ({ERROR}); waiting for it since {timezone.localtime(since):%Y-%m-%d %H:%M:%S %Z}"
    run_transition(run=run, state=RunState.QUEUED)
    run_transition(run=run, state=RunState.QUEUED, note=note)  # as its worker sends it back
    make_user("olga", "operator", password=PASSWORD)
    with signed_in(page_server, "olga", f"/hosts/{host.pk}/", height=900) as (page, violations, errors):
        page.screenshot(path=str(ARTIFACTS / "host-unreachable.png"), full_page=True)
        badge = page.locator("#host-unreachable-badge").text_content() or ""
        box = page.locator("#host-unreachable").text_content() or ""

        page.goto(f"{page_server}/runs/{run.pk}/")
        page.screenshot(path=str(ARTIFACTS / "run-waits-for-unreachable-host.png"), full_page=True)
        wait = page.locator("#run-wait-text").text_content() or ""
        steps = page.locator("#steps li").all_text_contents()

    shown_since = f"unreachable since {timezone.localtime(since):%Y-%m-%d %H:%M:%S %Z} ({ERROR})"
    assert badge == "unreachable"
    assert shown_since in box and "Its queued runs, builds and fio baselines wait for it" in box
    assert wait.startswith(f"lab1 is {shown_since}; tried again from "), wait
    assert len(steps) == 2 and note in steps[1], steps
    assert not violations and not errors, violations + errors
