"""Controls a role cannot use are shown disabled with the reason (runs/templatetags/controls.py), the
server still refuses them; destructive actions confirm with the current state (issue 35, point 8)."""

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.template import Context, Template, TemplateSyntaxError
from django.urls import reverse

from runs.common.roles import role_of, role_refusal
from runs.models import Campaign, CampaignSchedule, RunState, ScheduleSubscriber
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.schedules.test_rounds import nightly

pytestmark = pytest.mark.django_db


def test_the_reason_names_the_role_needed_and_the_readers(users: dict[str, User]) -> None:
    assert [role_of(users[name]) for name in ("nora", "vera", "otto", "ada")] == [None, "viewer", "operator", "admin"]
    assert role_refusal(users["vera"], "runs.queue_run", "queue runs") == (
        "Operators queue runs; you are a viewer (an admin gives roles)."
    )
    assert role_refusal(users["otto"], "runs.add_host", "add hosts") == (
        "Admins add hosts; you are an operator (an admin gives roles)."
    )
    assert role_refusal(users["nora"], "runs.queue_run", "queue runs") == (
        "Operators queue runs; you have no role in benchlab yet (an admin gives roles)."
    )
    assert role_refusal(AnonymousUser(), "runs.queue_run", "queue runs") is not None
    assert role_refusal(users["otto"], "runs.queue_run", "queue runs") is None


def test_the_tag_draws_a_disabled_button_named_by_its_reason(users: dict[str, User]) -> None:
    html = Template(
        '{% load controls %}{% cannot_use "run-again" needs="runs.queue_run" doing="queue runs" %}Run {{ n }} again'
        "{% end_cannot_use %}"
    ).render(Context({"user": users["vera"], "n": "<5>"}))

    assert html == (
        '<span class="cannot-use"><button type="button" id="run-again" disabled aria-describedby="run-again-refusal">'
        'Run &lt;5&gt; again</button> <span class="muted refusal" id="run-again-refusal">Operators queue runs; '
        "you are a viewer (an admin gives roles).</span></span>"
    )


@pytest.mark.parametrize(
    "tag",
    [
        "{% cannot_use %}x{% end_cannot_use %}",
        '{% cannot_use "a" needs="runs.queue_run" %}x{% end_cannot_use %}',  # no doing=: no reason to say
        '{% cannot_use "a" reason="r" colour="red" %}x{% end_cannot_use %}',
        '{% cannot_use "a" "r" %}x{% end_cannot_use %}',
    ],
)
def test_the_tag_refuses_what_it_cannot_say(tag: str) -> None:
    with pytest.raises(TemplateSyntaxError, match="cannot_use"):
        Template("{% load controls %}" + tag)


@pytest.fixture
def lab() -> tuple:
    host = make_host()
    return host, make_device(host), make_pg_install(host)


@pytest.mark.parametrize(
    ("url", "control", "reason", "enabled"),
    [
        (
            "campaigns",
            "campaign-new",
            "Operators start campaigns; you are a viewer",
            'href="/campaigns/new/">New campaign',
        ),
        ("builds", "build-new", "Operators build PostgreSQL; you are a viewer", 'href="/builds/new/">Build PostgreSQL'),
        (
            "baselines",
            "baseline-new",
            "Operators measure devices with fio; you are a viewer",
            'href="/baselines/new/">Measure a device with fio',
        ),
    ],
)
def test_a_viewer_sees_the_list_pages_controls_disabled_and_an_operator_uses_them(
    client_for: ClientFactory, url: str, control: str, reason: str, enabled: str
) -> None:
    viewer = client_for("vera").get(reverse(url)).content.decode()
    operator = client_for("otto").get(reverse(url)).content.decode()

    assert f'<button type="button" id="{control}" disabled aria-describedby="{control}-refusal">' in viewer
    assert f'id="{control}-refusal">{reason} (an admin gives roles).</span>' in viewer
    assert enabled not in viewer
    assert enabled in operator and f'id="{control}"' not in operator
    target = reverse(control)
    assert client_for("vera").get(target).status_code == 403  # a typed URL is still refused


def test_a_viewer_sees_a_runs_controls_disabled_with_why(client_for: ClientFactory, lab: tuple) -> None:
    otto = client_for.users["otto"]
    run = make_run(*lab, state=RunState.MEASURING, queued_by=otto)

    viewer = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()
    owner = client_for("otto").get(reverse("run-detail", args=[run.pk])).content.decode()

    assert 'id="run-again" disabled' in viewer and "Operators queue runs; you are a viewer" in viewer
    assert f'id="cancel" disabled aria-describedby="cancel-refusal" class="danger">Cancel run {run.pk}…' in viewer
    assert "To cancel runs needs the operator role; you are a viewer." in viewer
    assert 'id="run-again"' not in owner and f'href="/runs/new/?again={run.pk}">Run again' in owner
    assert 'id="cancel-confirm"' in owner and 'id="cancel" disabled' not in owner
    assert client_for("vera").post(reverse("run-cancel", args=[run.pk])).status_code == 403


def test_a_viewer_sees_a_devices_controls_disabled_with_why(client_for: ClientFactory, lab: tuple) -> None:
    page = client_for("vera").get(reverse("device-detail", args=[lab[1].pk])).content.decode()

    assert 'id="measure" disabled' in page and "Operators measure devices with fio; you are a viewer" in page
    assert 'id="read-health" disabled' in page and "Operators read a device&#x27;s health; you are a viewer" in page


def test_a_viewer_sees_why_she_cannot_triage_or_subscribe(users: dict[str, User], client_for: ClientFactory) -> None:
    schedule = nightly(users["otto"])
    regressions = client_for("vera").get(reverse("regressions")).content.decode()
    operator_regressions = client_for("otto").get(reverse("regressions")).content.decode()
    schedule_page = client_for("vera").get(reverse("schedule-detail", args=[schedule.pk])).content.decode()

    assert 'id="triage" disabled' in regressions and 'id="triage"' not in operator_regressions
    said = "Operators triage change points (acknowledge, mark expected, reopen); you are a viewer"
    assert said in regressions
    assert 'id="subscriber-add" disabled' in schedule_page and 'action="/schedules/' not in schedule_page
    assert "To change campaigns needs the operator role; you are a viewer." in schedule_page


def test_cancelling_a_campaign_confirms_with_its_runs_states(client_for: ClientFactory, lab: tuple) -> None:
    otto = client_for.users["otto"]
    campaign = Campaign.objects.create(created_by=otto, name="ram vs hdd", base_spec={})
    for state in (RunState.DONE, RunState.MEASURING, RunState.QUEUED, RunState.QUEUED):
        make_run(*lab, state=state, queued_by=otto, campaign=campaign)

    page = client_for("otto").get(reverse("campaign-detail", args=[campaign.pk])).content.decode()

    assert '<summary class="danger" id="cancel-campaign-open">Cancel the campaign…</summary>' in page
    question = f"<strong>Cancel campaign {campaign.pk}</strong> (ram vs hdd, 1 of 4 runs finished)?"
    assert question in page
    assert "2 queued runs leave the queue; 1 running run is stopped and its hosts cleaned up." in page
    assert campaign.runs.filter(state=RunState.QUEUED).count() == 2  # asking changed nothing


def test_deleting_a_schedule_and_removing_a_subscriber_confirm_with_their_state(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    schedule = nightly(users["otto"])
    subscriber = ScheduleSubscriber.objects.create(schedule=schedule, email="lab@example.org")

    page = client_for("otto").get(reverse("schedule-detail", args=[schedule.pk])).content.decode()

    said = f"<strong>Delete schedule {schedule.pk}</strong> (nightly ram vs hdd)? It is on: its next round would be"
    assert said in page and 'class="danger delete-schedule-open">Delete the schedule…</summary>' in page
    assert f'id="subscriber-{subscriber.pk}-question"><strong>Stop telling lab@example.org</strong>' in page
    assert CampaignSchedule.objects.filter(pk=schedule.pk).exists()
    assert client_for("otto").post(reverse("schedule-delete", args=[schedule.pk])).status_code == 302
    assert not CampaignSchedule.objects.filter(pk=schedule.pk).exists()
