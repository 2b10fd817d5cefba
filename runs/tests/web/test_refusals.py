"""What benchlab refuses, and that it says why: cancelling another operator's run or campaign,
retrying another's campaign, queueing on benchlab's own server unless an admin allows it, event
streams that cannot be served."""

import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from runs.bench.services.execute import run_execute
from runs.campaigns.services.campaigns import campaign_create
from runs.jobs.dispatch import queue_dispatch
from runs.models import AuditEvent, Campaign, Host, Run, RunState
from runs.tests.campaigns.test_campaigns import devices_and_options, lab1, plan_on
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user, run_form_fields

pytestmark = pytest.mark.django_db


def logged_in(name: str, role: str) -> Client:
    client = Client()
    client.force_login(make_user(name, role))
    return client


@pytest.fixture
def ottos_run() -> Run:
    host = make_host()
    otto = make_user("otto", "operator")
    return make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING, queued_by=otto)


def test_another_operator_sees_who_may_cancel_and_cannot(ottos_run: Run) -> None:
    olga = logged_in("olga", "operator")

    page = olga.get(reverse("run-detail", args=[ottos_run.pk])).content.decode()
    posted = olga.post(reverse("run-cancel", args=[ottos_run.pk]))

    assert "Only otto, who queued this run, or an admin can cancel it." in page
    assert 'id="cancel" disabled' in page
    assert posted.status_code == 403
    assert "Only otto, who queued this run, or an admin can cancel it." in posted.content.decode()
    ottos_run.refresh_from_db()
    assert not ottos_run.cancel_requested


def test_the_api_refuses_another_operators_cancel_with_the_reason(ottos_run: Run) -> None:
    api = APIClient()
    api.force_authenticate(make_user("olga", "operator"))

    response = api.post(f"/api/runs/{ottos_run.pk}/cancel/")

    assert response.status_code == 403
    assert response.json()["detail"] == "Only otto, who queued this run, or an admin can cancel it."


@pytest.mark.parametrize("who, role", [("otto", None), ("ada", "admin")])
def test_the_owner_and_admins_may_cancel(ottos_run: Run, who: str, role: str | None) -> None:
    client = Client()
    client.force_login(ottos_run.queued_by if role is None else make_user(who, role))  # type: ignore[arg-type]

    page = client.get(reverse("run-detail", args=[ottos_run.pk])).content.decode()
    client.post(reverse("run-cancel", args=[ottos_run.pk]))

    assert '<button type="submit" id="cancel" class="danger"' in page
    ottos_run.refresh_from_db()
    assert ottos_run.cancel_requested


def this_machine(**fields: object) -> Host:
    host = make_host(name="this-machine", transport=Host.Transport.LOCAL, address="localhost", **fields)
    make_device(host, name="local-dir", kind="virtual", path="/srv/benchlab-device")
    make_pg_install(host)
    return host


def queue_form(host: Host) -> dict[str, object]:
    return run_form_fields(host, host.devices.get(), host.pg_installs.get(), filesystem="directory", mount_options="")


def test_benchlab_s_own_server_takes_no_runs_unless_an_admin_allows_it() -> None:
    host = this_machine()
    otto = logged_in("otto", "operator")

    form = otto.get(reverse("run-new")).content.decode()
    refused = otto.post(reverse("run-new"), queue_form(host))
    Host.objects.filter(pk=host.pk).update(allow_runs_on_benchlab_server=True)
    allowed = otto.post(reverse("run-new"), queue_form(host))

    assert "this-machine (benchlab&#x27;s own server: runs not allowed)" in form
    assert refused.status_code == 400
    assert "this-machine is benchlab&#x27;s own server, and an admin has not allowed runs on it" in (
        refused.content.decode()
    )
    assert allowed.status_code == 302 and Run.objects.count() == 1


def test_a_queued_run_on_a_server_no_longer_allowed_fails_with_the_reason_instead_of_waiting() -> None:
    host = this_machine(allow_runs_on_benchlab_server=True)
    run = make_run(host, host.devices.get(), host.pg_installs.get(), state=RunState.QUEUED, filesystem="directory")
    Host.objects.filter(pk=host.pk).update(allow_runs_on_benchlab_server=False)
    assert queue_dispatch() == [run.pk]  # its turn: a worker takes it, and finds it forbidden

    outcome = run_execute(run_id=run.pk)

    run.refresh_from_db()
    assert outcome == run.state == RunState.FAILED
    assert "an admin has not allowed runs on it" in run.error
    assert Host.objects.get(pk=host.pk).claimed_by is None


def test_the_event_stream_of_a_run_that_does_not_exist_is_404_not_an_endless_stream() -> None:
    response = logged_in("vera", "viewer").get("/runs/987654/events")

    assert response.status_code == 404
    assert b"There is no run 987654" in response.content


@pytest.mark.parametrize("after", ["18446744073709551616-0", "1-18446744073709551616", "abc", "1-2-3"])
def test_an_event_id_redis_cannot_take_is_400_with_what_is_allowed(ottos_run: Run, after: str) -> None:
    response = logged_in("vera", "viewer").get(f"/runs/{ottos_run.pk}/events", {"after": after})

    assert response.status_code == 400
    assert b"after must be an event id such as 1700000000000-0" in response.content


def test_a_refused_page_is_logged_in_one_line_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    nora = Client()
    nora.force_login(make_user("nora"))

    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = nora.get(reverse("run-new"))  # permission_required raises PermissionDenied

    assert response.status_code == 403
    assert [record.getMessage() for record in caplog.records] == ["Forbidden (Permission denied): /runs/new/"]
    assert all(record.exc_info is None for record in caplog.records)


def test_a_warm_up_longer_than_a_week_is_refused_like_a_duration() -> None:
    host = make_host()
    form = run_form_fields(host, make_device(host, wipe_allowed=True, capacity_bytes=2**30), make_pg_install(host))
    otto = logged_in("otto", "operator")

    week = otto.post(reverse("run-new"), form | {"warmup_s": 7 * 24 * 3600})
    longer = otto.post(reverse("run-new"), form | {"warmup_s": 7 * 24 * 3600 + 1})

    assert week.status_code == 302
    assert longer.status_code == 400
    assert "warm-up (s) must be between 0 and 604800 (7 days); got 604801." in longer.content.decode()


@pytest.mark.parametrize(
    "address, own_server",
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("0.0.0.0", True),  # noqa: S104 - an address to recognise, not to bind
        ("::ffff:127.0.0.1", True),
        ("localhost.", True),
        ("db.localhost", True),
        ("fe80::1%eth0", False),
        ("10.200.0.11", False),
        ("lab1.example", False),
    ],
)
def test_what_counts_as_benchlab_s_own_server(address: str, own_server: bool) -> None:
    assert Host(name="h", address=address).is_benchlab_server is own_server


def test_a_refused_event_stream_is_logged_in_one_line_without_a_traceback(
    ottos_run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    nora = Client()
    nora.force_login(make_user("nora"))

    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = nora.get(f"/runs/{ottos_run.pk}/events")

    assert response.status_code == 403
    assert [record.getMessage() for record in caplog.records] == [f"Forbidden: /runs/{ottos_run.pk}/events"]
    assert all(record.exc_info is None for record in caplog.records)


# ---- campaigns: their owner and admins cancel and retry them, nobody else ----


@pytest.fixture
def ottos_campaign(users: dict[str, User]) -> Campaign:
    """otto's campaign of 4 configurations, 2 rounds: the first round failed, the second is queued."""
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host), repetitions=2), by=users["otto"])
    Run.objects.filter(campaign=campaign, repetition=1).update(state=RunState.FAILED, error="mkfs failed")
    return campaign


def campaign_state(campaign: Campaign) -> list[tuple[int, str, bool, str | None]]:
    runs = Run.objects.filter(campaign=campaign).select_related("queued_by").order_by("pk")
    return [
        (run.pk, run.state, run.cancel_requested, run.queued_by.username if run.queued_by else None) for run in runs
    ]


def test_another_operator_can_neither_cancel_nor_retry_a_campaign_on_its_page_or_through_the_api(
    ottos_campaign: Campaign,
) -> None:
    olga = make_user("olga", "operator")
    page, api = Client(), APIClient()
    page.force_login(olga)
    api.force_authenticate(olga)
    before, audited = campaign_state(ottos_campaign), AuditEvent.objects.count()

    answers = {
        "cancel": [
            page.post(reverse("campaign-cancel", args=[ottos_campaign.pk])),
            page.post(reverse("campaign-cancel", args=[ottos_campaign.pk]), {"configuration": "0"}),
            api.post(f"/api/campaigns/{ottos_campaign.pk}/cancel/", {}, format="json"),
            api.post(f"/api/campaigns/{ottos_campaign.pk}/cancel/", {"configuration": 0}, format="json"),
        ],
        "retry": [
            page.post(reverse("campaign-retry", args=[ottos_campaign.pk])),
            api.post(f"/api/campaigns/{ottos_campaign.pk}/retry/", {}, format="json"),
        ],
    }

    for doing, responses in answers.items():
        for response in responses:
            assert response.status_code == 403, (doing, response.status_code)
            said = f"Only otto, who queued this campaign, or an admin can {doing} it."
            assert said in response.content.decode(), response.content[:300]
    assert campaign_state(ottos_campaign) == before and AuditEvent.objects.count() == audited


def test_the_owner_cancels_his_campaign_after_an_admin_retried_it(
    ottos_campaign: Campaign, users: dict[str, User]
) -> None:
    ada = APIClient()
    ada.force_authenticate(users["ada"])
    otto = Client()
    otto.force_login(users["otto"])

    retried = ada.post(f"/api/campaigns/{ottos_campaign.pk}/retry/", {}, format="json")
    run_by_ada = Run.objects.filter(campaign=ottos_campaign, queued_by=users["ada"]).first()
    assert run_by_ada is not None
    page = otto.get(reverse("run-detail", args=[run_by_ada.pk])).content.decode()
    cancelled = otto.post(reverse("campaign-cancel", args=[ottos_campaign.pk]))

    assert retried.status_code == 200 and retried.json()["queued"] == 4
    assert 'id="cancel" disabled' not in page  # a run of his campaign is his to cancel
    assert cancelled.status_code == 302, cancelled.content[:300]
    states = {(name, state) for _, state, _, name in campaign_state(ottos_campaign)}
    assert states == {("otto", RunState.FAILED), ("otto", RunState.CANCELLED), ("ada", RunState.CANCELLED)}


def test_a_cancel_with_nothing_left_to_cancel_says_so_and_writes_no_audit_entry(
    ottos_campaign: Campaign, users: dict[str, User]
) -> None:
    """Every run has ended but configuration 0's second, which is being stopped (cancel requested)."""
    queued = Run.objects.filter(campaign=ottos_campaign, state=RunState.QUEUED)
    queued.exclude(configuration__index=0).update(state=RunState.DONE)
    queued.update(state=RunState.MEASURING, cancel_requested=True)
    page, api = Client(), APIClient()
    page.force_login(users["otto"])
    api.force_authenticate(users["otto"])
    audited = AuditEvent.objects.count()

    on_the_page = page.post(reverse("campaign-cancel", args=[ottos_campaign.pk]))
    one = page.post(reverse("campaign-cancel", args=[ottos_campaign.pk]), {"configuration": "1"})
    through_the_api = api.post(f"/api/campaigns/{ottos_campaign.pk}/cancel/", {}, format="json")

    for response in (on_the_page, through_the_api):
        assert response.status_code == 400
        assert (
            "Nothing of this campaign is left to cancel: its runs have ended or are being stopped."
            in response.content.decode()
        )
    left = "Nothing of configuration 1 (lab1:ram · default mount options) is left"
    assert one.status_code == 400 and left in one.content.decode()
    assert AuditEvent.objects.count() == audited
