"""A schedule's subscribers in a real browser (chromium under Playwright, against uvicorn; no worker):
a webhook URL that is not http(s) is refused saying so, a good one is added with its secret shown
once, and a delivery that failed is shown. Screenshot: test-artifacts/schedule-subscribers.png."""

import pytest
from django.utils import timezone

from runs.models import Notification, ScheduleSubscriber
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user
from runs.tests.schedules.test_rounds import nightly

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_an_operator_subscribes_a_webhook_and_sees_its_secret_once_and_a_failure(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    schedule = nightly(otto)
    earlier = ScheduleSubscriber.objects.create(schedule=schedule, email="ops@example.org")
    Notification.objects.create(
        subscriber=earlier, event="change_point", channel="email", target="ops@example.org", payload={},
        attempts=5, last_error="[Errno 111] Connection refused", next_attempt_at=None, created_at=timezone.now(),
    )  # fmt: skip
    with signed_in(page_server, "otto", f"/schedules/{schedule.pk}/", height=1000) as (page, violations, errors):
        page.fill("#subscriber-add input[name=webhook_url]", "ftp://hooks.example.org/benchlab")
        page.evaluate("document.querySelector('#subscriber-add').noValidate = true")
        page.click("#subscriber-add button[type=submit]")
        page.wait_for_selector("#subscribe-errors")
        refusal = page.locator("#subscribe-errors").text_content() or ""
        page.fill("#subscriber-add input[name=webhook_url]", "https://hooks.example.org/benchlab")
        page.click("#subscriber-add button[type=submit]")
        page.wait_for_selector("#new-secret")
        page.screenshot(path=str(ARTIFACTS / "schedule-subscribers.png"), full_page=True)
        secret = page.locator("#new-secret code").text_content() or ""
        explained = page.locator("#subscribers > p.muted").last.text_content() or ""
        failures = page.locator("#delivery-failures li").all_text_contents()
        page.reload()
        page.wait_for_selector("#subscriber-list")
        shown_again = secret in page.content()
        listed = page.locator("#subscriber-list tbody tr").all_text_contents()

    assert "webhook_url: a webhook URL must be http:// or https:// with a host" in refusal
    assert secret.startswith("whsec_") and not shown_again
    assert "Holm-adjusted together, adjusted p < 0.05 and a change of at least 2 %" in explained
    assert "fewer than 2 repetitions in either round is not tested" in explained
    assert failures == ["email to ops@example.org failed 5 times: [Errno 111] Connection refused (given up)"]
    assert len(listed) == 2 and "https://hooks.example.org/benchlab" in listed[1]
    assert ScheduleSubscriber.objects.get(webhook_url="https://hooks.example.org/benchlab").webhook_secret == secret
    refused_post = f"/schedules/{schedule.pk}/: 400 from "
    assert len(errors) == 1 and refused_post in errors[0] and errors[0].endswith("/subscribers"), errors  # the ftp one
    assert not violations, violations
