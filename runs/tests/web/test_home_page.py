"""The home page for each role (issue 35, point 7): recent runs and campaigns with the reader's own
first, what each host is doing and what waits for it, the next step for the role, and a three-step
start in a lab with no runs; in a fixed number of queries."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from runs.models import Campaign, DeviceBaseline, Host, PgBuild, Run, RunClient, RunState
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.job_factories import make_baseline, make_build, make_campaign

pytestmark = pytest.mark.django_db


def ago(row: Run | Campaign | PgBuild | DeviceBaseline, minutes: int) -> None:
    type(row).objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=minutes))


def ids_in(html: str, prefix: str) -> list[int]:
    """The ids of the rows `<tr id="<prefix>-<id>"` in `html`, in order."""
    return [int(part.split('"', 1)[0]) for part in html.split(f'<tr id="{prefix}-')[1:]]


def test_an_operator_sees_their_own_runs_and_campaigns_first(users: dict[str, User], client_for: ClientFactory) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    adas = [make_run(host, device, pg, queued_by=users["ada"]) for _ in range(2)]
    ottos = [make_run(host, device, pg, queued_by=users["otto"]) for _ in range(7)]
    for minutes, run in enumerate([*adas, *ottos], start=1):
        ago(run, minutes)  # ada's two are the newest of all
    ottos_campaign, _ = make_campaign(users["otto"], name="ottos study")
    adas_campaign, _ = make_campaign(users["ada"], name="adas study")
    make_run(host, device, pg, queued_by=users["otto"], campaign=ottos_campaign, state=RunState.FAILED)

    page = client_for("otto").get(reverse("home")).content.decode()
    mine, others = page.split('id="recent-runs-mine"')[1].split('id="recent-runs-others"')

    # Their own five newest first, though ada's are newer; then everybody else's.
    assert page.index('id="recent-runs-mine"') < page.index('id="recent-runs-others"')
    shown = ids_in(mine, "recent-run")
    newest_of_mine = Run.objects.filter(queued_by=users["otto"]).order_by("-created_at", "-id")
    assert shown == [run.pk for run in newest_of_mine[:5]] and len(shown) == 5
    assert ids_in(others.split('id="recent-campaigns')[0], "recent-run") == [adas[0].pk, adas[1].pk]  # newest first
    assert ids_in(page, "recent-campaign") == [ottos_campaign.pk, adas_campaign.pk]
    assert "0 of 1 finished" not in page and '1 of 1 finished · <span class="state-failed">1 failed</span>' in page
    assert 'id="next-queue" href="/runs/new/"' in page and 'id="next-campaign" href="/campaigns/new/"' in page
    assert 'id="next-admin"' not in page and 'id="start"' not in page


def test_a_viewer_on_an_empty_lab_gets_three_steps_saying_whom_to_ask(client_for: ClientFactory) -> None:
    page = client_for("vera").get(reverse("home")).content.decode()

    assert 'id="start"' in page and page.count('<li id="start-') == 3
    assert "An admin adds hosts and devices (ask ada)" in page
    assert "Operators queue runs; you are a viewer: ask ada for the operator role, or an operator to queue one." in page
    assert 'href="/runs/new/"' not in page and 'id="recent-runs' not in page and 'id="now"' not in page


def test_an_admin_on_an_empty_lab_is_shown_how_to_add_hosts(client_for: ClientFactory) -> None:
    page = client_for("ada").get(reverse("home")).content.decode()

    assert f'<a href="{reverse("admin:runs_host_add")}">Add a host</a> and its devices in the Admin' in page
    assert "<code>manage.py lab_register</code>" in page and "(ask " not in page


def test_an_operator_in_a_lab_with_hosts_but_no_runs_has_the_first_step_done(client_for: ClientFactory) -> None:
    make_host()
    page = client_for("otto").get(reverse("home")).content.decode()

    assert '<li id="start-hosts" class="step-done">' in page and "Done: 1 host in the inventory" in page
    assert '<a class="button" href="/runs/new/">Queue a run</a>' in page


def test_each_host_says_what_it_is_doing_and_what_waits_for_it(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    lab1, lab2, lab3 = (make_host(name=f"lab{n}", address=f"10.200.0.1{n}") for n in (1, 2, 3))
    device, pg = make_device(lab1), make_pg_install(lab1)
    busy = make_run(lab1, device, pg, state=RunState.MEASURING, queued_by=users["otto"])
    Host.objects.filter(pk=lab1.pk).update(claimed_by=busy)
    first = make_run(lab1, device, pg, state=RunState.QUEUED, queued_by=users["otto"], client_host=lab2)
    make_run(lab1, device, pg, state=RunState.QUEUED, queued_by=users["ada"])
    build = make_build(lab2, users["ada"])
    ago(build, 30)  # queued before the run that also needs lab2 as its client host
    ago(first, 10)

    page = client_for("vera").get(reverse("home")).content.decode()
    row = {host.name: page.split(f'id="now-{host.pk}"')[1].split("</tr>")[0] for host in (lab1, lab2, lab3)}

    assert f'<a href="/runs/{busy.pk}/">run {busy.pk}</a> (measuring)' in row["lab1"]
    assert "2 queued" in row["lab1"] and f'<a href="/runs/{first.pk}/">run {first.pk}</a>' in row["lab1"]
    assert "by otto" in row["lab1"]
    assert "2 queued" in row["lab2"] and f'<a href="/builds/{build.pk}/">build {build.pk}</a>' in row["lab2"]
    assert '<span class="badge badge-ok">free</span>' in row["lab2"] and "by ada" in row["lab2"]
    assert "none" in row["lab3"] and "free" in row["lab3"]


def test_the_page_takes_a_fixed_number_of_queries(
    users: dict[str, User], client_for: ClientFactory, django_assert_max_num_queries: DjangoAssertNumQueries
) -> None:
    client = client_for("vera")
    for n in range(6):
        host = make_host(name=f"lab{n}", address=f"10.200.1.{n}")
        device, pg = make_device(host), make_pg_install(host)
        campaign, _ = make_campaign(users["otto" if n % 2 else "ada"], name=f"study {n}")
        held = make_run(host, device, pg, state=RunState.MEASURING, queued_by=users["otto"], campaign=campaign)
        Host.objects.filter(pk=host.pk).update(claimed_by=held)
        for _ in range(2):
            queued = make_run(host, device, pg, state=RunState.QUEUED, queued_by=users["ada"], campaign=campaign)
            RunClient.objects.create(run=queued, host=host, position=1)
        make_build(host, users["otto"])
        make_baseline(device, users["otto"])

    # The session, the user and their permissions (4), the inventory (3), what waits for each host
    # (4) and the first of each kind (3), the recent runs (2) and campaigns (3), whom to ask (1).
    with django_assert_max_num_queries(20):
        page = client.get(reverse("home"))
    assert page.status_code == 200 and page.content.decode().count('<tr id="now-') == 6
