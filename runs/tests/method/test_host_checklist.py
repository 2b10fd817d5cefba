"""The checklist before a campaign: each server and client host as last read, by its probe or by its
last run, whichever is newer, with which and when; a host never read named as such; "Check the
hosts now" reading the hosts live (this machine, as a local host) and naming one that does not
answer while nothing else changes."""

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.method.preview import PROBE, RUN, HostAsRead
from runs.method.selectors import hosts_as_last_read
from runs.models import Campaign, Host, Run
from runs.tests.campaigns.test_campaigns import campaign_form, lab1
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.keys import generate_key
from runs.tests.method.test_method_panel import recorded_run

pytestmark = pytest.mark.django_db
QUIET = {"load_1m_start": 0.1, "load_1m_end": 0.2, "cpu_count": 2, "busiest": []}
BUSY = {
    "load_1m_start": 0.3,
    "load_1m_end": 1.9,
    "cpu_count": 2,
    "busiest": [{"pid": 42, "command": "yes", "cpu_pct": 99.5}],
}


def probed(host: Host, ago: timedelta, tuning: dict[str, Any], during: dict[str, Any]) -> None:
    """Host.facts["now"] as a probe writes it, `ago` before now."""
    read_at = (timezone.now() - ago).isoformat()
    host.facts = {"hostname": host.name, "now": {"read_at": read_at, "host": tuning, "during": during}}
    host.save(update_fields=["facts"])


def ran_on(host: Host, ago: timedelta, method: dict[str, Any], **fields: Any) -> Run:
    stored = timezone.now() - ago
    device = host.devices.first() or make_device(host)
    install = host.pg_installs.first() or make_pg_install(host)
    return make_run(host, device, install, environment={"method": method}, results_stored_at=stored, finished_at=stored,
                    **fields)  # fmt: skip


def test_a_probe_newer_than_the_last_run_is_what_the_checklist_says() -> None:
    host = make_host(name="lab1")
    ran_on(host, timedelta(hours=2), {"host": {"governor": "performance", "boost": False}, "during": QUIET})
    probed(host, timedelta(minutes=3), {"governor": "powersave", "boost": False}, BUSY)

    read = hosts_as_last_read([host.pk])[host.pk]

    assert (read.source, read.found) == (PROBE, ("CPU frequency governor powersave", "yes (PID 42) took 100 % CPU"))
    assert read.said == "lab1: CPU frequency governor powersave; yes (PID 42) took 100 % CPU (probed 3\xa0minutes ago)"


def test_a_run_newer_than_the_probe_is_what_the_checklist_says() -> None:
    host = make_host(name="lab1")
    probed(host, timedelta(days=1), {"governor": "powersave"}, QUIET)
    newer = ran_on(host, timedelta(hours=1), {"host": {"governor": "ondemand", "boost": True}, "during": QUIET})

    read = hosts_as_last_read([host.pk])[host.pk]

    assert (read.source, read.run_id) == (RUN, newer.pk)
    assert read.said == (
        f"lab1: CPU frequency governor ondemand; CPU boost (turbo) on: the clock follows temperature "
        f"(by its run {newer.pk}, 1\xa0hour ago)"
    )


def test_a_host_never_probed_nor_run_is_said_to_be_unknown() -> None:
    host = make_host(name="lab1")
    host.facts = {"hostname": "lab1"}  # probed before probes read the tuning: no reading either
    host.save(update_fields=["facts"])

    assert hosts_as_last_read([host.pk]) == {host.pk: HostAsRead("lab1", "")}


def test_a_client_host_is_read_by_the_last_run_it_drove() -> None:
    server, client = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    run = ran_on(server, timedelta(minutes=10), {"host": {}, "during": QUIET, "during_clients": {"lab2": BUSY}},
                 client_hosts=[client])  # fmt: skip

    read = hosts_as_last_read([server.pk, client.pk])

    assert (read[server.pk].source, read[server.pk].found) == (RUN, ())
    assert read[client.pk].said == f"lab2: yes (PID 42) took 100 % CPU (by its run {run.pk}, 10\xa0minutes ago)"


def test_the_preview_lists_the_hosts_and_warns_for_one_never_read(client_for: ClientFactory) -> None:
    host = lab1()

    page = client_for("otto").post(reverse("campaign-new"), campaign_form(host)).content.decode()

    assert 'id="host-checklist"' in page and "lab1: not known" in page and "never probed nor run" in page
    assert "lab1: never probed nor run: its CPU settings and load are not known" in page  # the method warning
    assert 'id="check-hosts"' in page and "hosts-unread" not in page


def test_checking_a_host_that_does_not_answer_names_it_and_changes_nothing(
    client_for: ClientFactory, tmp_path: Path
) -> None:
    host = lab1()
    generate_key(tmp_path)
    Host.objects.filter(pk=host.pk).update(
        address="127.0.0.1", ssh_port=1, private_key_path=str(tmp_path / "key"), allow_runs_on_benchlab_server=True
    )  # nothing listens on port 1: refused at once
    probed(host, timedelta(hours=3), {"governor": "powersave"}, QUIET)
    before = Host.objects.get(pk=host.pk)
    otto = client_for("otto")

    preview = otto.post(reverse("campaign-new"), campaign_form(host)).content.decode()
    response = otto.post(reverse("campaign-new"), campaign_form(host, action="check-hosts"))

    page = response.content.decode()
    assert response.status_code == 200, page
    assert (
        "Could not read lab1 (cannot connect to root@[127.0.0.1]:1: " in page and "Unable to connect to port 1" in page
    )
    after = Host.objects.get(pk=host.pk)
    assert (after.facts, after.probed_at, after.updated_at) == (before.facts, before.probed_at, before.updated_at)
    assert not Run.objects.exists() and not Campaign.objects.exists()
    said = "lab1: CPU frequency governor powersave (probed 3\xa0hours ago)"
    assert said in preview and said in page  # the checklist as before


def test_checking_the_hosts_now_reads_them_and_the_preview_says_so(client_for: ClientFactory) -> None:
    host = lab1()
    local = {"transport": Host.Transport.LOCAL, "allow_runs_on_benchlab_server": True}
    Host.objects.filter(pk=host.pk).update(**local)  # this machine, read-only
    ran_on(host, timedelta(days=2), {"host": {"governor": "powersave"}, "during": QUIET})

    response = client_for("otto").post(reverse("campaign-new"), campaign_form(host, action="check-hosts"))

    page = response.content.decode()
    assert response.status_code == 200, page
    now = Host.objects.get(pk=host.pk).facts["now"]
    assert set(now) == {"read_at", "host", "during"}
    assert now["host"]["swappiness"] == int(Path("/proc/sys/vm/swappiness").read_text())
    assert now["during"]["cpu_count"] and isinstance(now["during"]["busiest"], list)
    assert "just checked" in page and "(probed less than a minute ago)" in page and "hosts-unread" not in page
    assert not Campaign.objects.exists()


def test_a_viewer_may_not_check_the_hosts(client_for: ClientFactory) -> None:
    host = lab1()
    Host.objects.filter(pk=host.pk).update(transport=Host.Transport.LOCAL, allow_runs_on_benchlab_server=True)

    response = client_for("vera").post(reverse("campaign-new"), campaign_form(host, action="check-hosts"))

    assert response.status_code == 403 and "now" not in Host.objects.get(pk=host.pk).facts


def test_the_run_pages_method_panel_names_a_busy_client_host(client_for: ClientFactory) -> None:
    lab2 = make_host(name="lab2", address="10.200.0.12")
    run = recorded_run(client_hosts=[lab2])
    busy = {"load_1m_start": 0.2, "cpu_count": 2, "busiest": [{"pid": 42, "command": "yes", "cpu_pct": 99.5}]}
    run.environment["method"]["during_clients"] = {"lab2": busy}
    run.save(update_fields=["environment"])

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    assert "client host lab2: yes (PID 42) took 100 % CPU" in page
