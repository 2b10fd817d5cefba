"""The campaign preview's checklist in a real browser, on the virtual lab: a server last read with
the powersave governor hours ago, "Check the hosts now" reads it and its client hosts over SSH
and the preview says what they are now; a client host that does not answer is named and keeps
what was read of it. Screenshots go to test-artifacts/."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.models import Campaign, Host, Run
from runs.tests.bench.test_run_execution import lab_inventory
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
__all__ = ["lab_inventory"]  # a fixture


def test_checking_the_hosts_now_replaces_an_old_reading_and_names_a_host_that_does_not_answer(
    page_server: str, lab_inventory: dict[str, Host]
) -> None:
    lab1, lab2, lab3 = (lab_inventory[name] for name in ("lab1", "lab2", "lab3"))
    old = {"governor": "powersave", "boost": None, "smt": None, "thp": None, "swappiness": 60, "numa_nodes": 1}
    read_at = (timezone.now() - timedelta(hours=3)).isoformat()
    quiet = {"load_1m_start": 0.1, "load_1m_end": 0.1, "cpu_count": 2, "busiest": []}
    Host.objects.filter(pk=lab1.pk).update(
        facts=lab1.facts | {"now": {"read_at": read_at, "host": old, "during": quiet}}
    )
    Host.objects.filter(pk=lab3.pk).update(ssh_port=1)  # nothing listens there: lab3 does not answer
    lab3_before = Host.objects.get(pk=lab3.pk).facts
    make_user("otto", "operator", password=PASSWORD)
    device, install = lab1.devices.get(name="ram"), lab1.pg_installs.get(bin_dir=PG_BIN)
    with signed_in(page_server, "otto", "/campaigns/new/", height=2400) as (page, violations, _errors):
        page.fill("#id_name", "check the hosts")
        page.select_option("#id_base-server_host", value=str(lab1.pk))
        page.select_option("#id_base-device", value=str(device.pk))
        page.select_option("#id_base-pg_install", value=str(install.pk))
        page.fill("#id_base-scale", "1")
        page.fill("#id_base-duration_s", "10")
        for client in (lab2, lab3):
            page.check(f"input[name='base-client_hosts'][value='{client.pk}']")
        page.fill("#id_mount_options", "noatime\nnoatime,nobarrier")
        page.click("#preview")
        page.wait_for_selector("#host-checklist")
        before = " ".join((page.text_content("#host-checklist") or "").split())
        warned_before = page.text_content("#method-warnings") or ""
        page.locator("#host-checklist").screenshot(path=str(ARTIFACTS / "campaign-host-checklist-before.png"))
        page.click("#check-hosts")
        page.wait_for_selector("#hosts-unread")
        after = " ".join((page.text_content("#host-checklist") or "").split())
        rows = [" ".join((row.text_content() or "").split()) for row in page.locator("#host-checklist li").all()]
        warned_after = page.text_content("#method-warnings") or ""
        page.locator("#host-checklist").screenshot(path=str(ARTIFACTS / "campaign-host-checklist-after.png"))
        page.locator("#method-warnings").screenshot(path=str(ARTIFACTS / "campaign-host-checklist-warnings.png"))
        page.screenshot(path=str(ARTIFACTS / "campaign-host-checklist-page.png"), full_page=True)

    assert f"{lab1.name}: CPU frequency governor powersave (probed 3 hours ago)" in before, before
    assert "CPU frequency governor powersave" in warned_before
    # Read now: the lab's hosts (this VM) have no cpufreq, so no governor. The load average is this shared
    # machine's: it may be named, so only the reading's source and time are asserted.
    for host, row in zip((lab1, lab2), rows, strict=False):
        assert row.startswith(f"{host.name}: ") and row.endswith("(probed less than a minute ago)"), rows
    assert "governor powersave" not in after
    assert "just checked" in after and f"Could not read {lab3.name} (cannot connect to " in after, after
    assert "governor powersave" not in warned_after
    assert Host.objects.get(pk=lab3.pk).facts == lab3_before
    assert Host.objects.get(pk=lab1.pk).facts["now"]["host"]["governor"] is None
    assert not Campaign.objects.exists() and not Run.objects.exists()
    assert not violations, violations
