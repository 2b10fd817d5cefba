"""The inventory meets the virtual lab: lab_register, "Probe now", pinning host keys, stored keys."""

import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from runs.common.ssh_keys import encrypt_private_key, parse_host_keys
from runs.inventory.services.connect import host_connect
from runs.management.commands.lab_register import lab_host_name
from runs.models import Device, Host, PgInstall
from runs.tests.conftest import ClientFactory
from runs.tests.virtual_lab import PG_BIN, VirtualLab

pytestmark = [pytest.mark.lab, pytest.mark.django_db]


def register(lab: VirtualLab) -> str:
    out = StringIO()
    call_command("lab_register", "--id", str(lab.lab_id), stdout=out)
    return out.getvalue()


def messages_of(response: object) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]  # type: ignore[attr-defined]


def test_lab_register_puts_hosts_disks_and_postgres_into_the_inventory(virtual_lab: VirtualLab) -> None:
    output = register(virtual_lab)
    register(virtual_lab)  # a second time changes nothing

    assert "probed" in output
    assert Host.objects.count() == len(virtual_lab.state["hosts"]) == 3
    for lab_host in virtual_lab.state["hosts"]:
        host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, lab_host["name"]))
        assert [k.line for k in parse_host_keys(host.host_keys)] == [lab_host["host_key_pub"]]
        assert host.hostname == lab_host["name"] and host.probed_at is not None and host.cpu_cores
        devices = {d.name: d for d in host.devices.all()}
        assert set(devices) == {"ssd", "hdd", "ram"}
        assert all(d.wipe_allowed for d in devices.values())
        assert devices["hdd"].kind == Device.Kind.HDD
        assert devices["ssd"].capacity_bytes == lab_host["disks"]["ssd"]["size_bytes"]
        assert PgInstall.objects.get(host=host, bin_dir=PG_BIN).block_size == 8192


def test_probe_now_in_the_admin_stores_the_facts(virtual_lab: VirtualLab, client_for: ClientFactory) -> None:
    register(virtual_lab)
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab1"))
    Host.objects.filter(pk=host.pk).update(kernel="", probed_at=None)

    response = client_for("ada").post(
        reverse("admin:runs_host_changelist"), {"action": "probe_now", "_selected_action": [host.pk]}, follow=True
    )

    host.refresh_from_db()
    assert host.kernel and host.probed_at is not None
    assert any(m.startswith(f"{host.name}: {host.cpu_cores} cores, Debian") for m in messages_of(response))


def test_probe_now_reports_a_refused_host_key(virtual_lab: VirtualLab, client_for: ClientFactory) -> None:
    register(virtual_lab)
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab2"))
    Host.objects.filter(pk=host.pk).update(host_keys="")

    response = client_for("ada").post(
        reverse("admin:runs_host_changelist"), {"action": "probe_now", "_selected_action": [host.pk]}, follow=True
    )

    assert any("probe failed" in m and "UNKNOWN" in m for m in messages_of(response))


def test_an_admin_pins_the_key_the_host_offers_after_seeing_its_fingerprint(
    virtual_lab: VirtualLab, client_for: ClientFactory
) -> None:
    register(virtual_lab)
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab1"))
    Host.objects.filter(pk=host.pk).update(host_keys="")
    key_file = Path(virtual_lab.host("lab1")["state_dir"]) / "ssh_host_ed25519_key.pub"
    expected = subprocess.run(["ssh-keygen", "-lf", str(key_file)], capture_output=True, text=True).stdout.split()[1]
    ada: Client = client_for("ada")
    changelist = reverse("admin:runs_host_changelist")

    shown = ada.post(changelist, {"action": "pin_host_keys", "_selected_action": [host.pk]})
    host.refresh_from_db()
    assert host.host_keys == "", "nothing may be pinned before the admin confirms"
    assert expected in shown.content.decode()

    ada.post(
        changelist,
        {
            "action": "pin_host_keys",
            "_selected_action": [host.pk],
            "confirm": "yes",
            f"fingerprint-{host.pk}": expected,
        },
    )

    host.refresh_from_db()
    assert [k.fingerprint for k in parse_host_keys(host.host_keys)] == [expected]
    connection = host_connect(host)
    assert connection.run(["hostname"]).stdout.strip() == "lab1"
    connection.close()


def test_a_fingerprint_that_changed_since_it_was_shown_is_not_pinned(
    virtual_lab: VirtualLab, client_for: ClientFactory
) -> None:
    register(virtual_lab)
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab1"))
    Host.objects.filter(pk=host.pk).update(host_keys="")

    response = client_for("ada").post(
        reverse("admin:runs_host_changelist"),
        {
            "action": "pin_host_keys",
            "_selected_action": [host.pk],
            "confirm": "yes",
            f"fingerprint-{host.pk}": "SHA256:x",
        },
        follow=True,
    )

    host.refresh_from_db()
    assert host.host_keys == ""
    assert any("nothing pinned" in m for m in messages_of(response))


def test_a_host_with_a_stored_encrypted_key_connects(virtual_lab: VirtualLab) -> None:
    register(virtual_lab)
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab2"))
    private_key = Path(virtual_lab.state["client_key"]).read_text()
    host.private_key_path = ""
    host.private_key_encrypted = encrypt_private_key(private_key)
    host.save()

    connection = host_connect(host)
    try:
        assert connection.run(["hostname"]).stdout.strip() == "lab2"
    finally:
        connection.close()
