from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from runs.common.ssh_keys import decrypt_private_key
from runs.models import Device, Host
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.keys import GeneratedKey, generate_key


def host_form(**fields: Any) -> dict[str, Any]:
    """A complete POST body for the host add/change form, with empty inlines."""
    data: dict[str, Any] = {
        "name": "lab2",
        "enabled": "on",
        "serves_postgres": "on",
        "runs_clients": "on",
        "notes": "",
        "transport": "ssh",
        "address": "10.200.0.12",
        "ssh_port": "22",
        "ssh_user": "root",
        "host_keys": "",
        "private_key_path": "",
        "new_private_key": "",
        "devices-TOTAL_FORMS": "0",
        "devices-INITIAL_FORMS": "0",
        "pg_installs-TOTAL_FORMS": "0",
        "pg_installs-INITIAL_FORMS": "0",
    }
    return data | fields


@pytest.fixture
def ada(client_for: ClientFactory) -> Client:
    return client_for("ada")


@pytest.fixture
def key(tmp_path: Path) -> GeneratedKey:
    return generate_key(tmp_path)


@pytest.mark.django_db
def test_an_admin_stores_a_private_key_encrypted_and_never_sees_it_again(ada: Client, key: GeneratedKey) -> None:
    response = ada.post(reverse("admin:runs_host_add"), host_form(new_private_key=key.private_text))

    assert response.status_code == 302, response.content.decode()[:2000]
    host = Host.objects.get(name="lab2")
    key_body = key.private_text.splitlines()[1]
    assert key_body not in host.private_key_encrypted
    assert decrypt_private_key(host.private_key_encrypted) == key.private_text
    assert key.fingerprint in host.private_key_fingerprint

    page = ada.get(reverse("admin:runs_host_change", args=[host.pk])).content.decode()
    assert key_body not in page
    assert host.private_key_encrypted not in page
    assert f"stored, encrypted (ssh-ed25519 {key.fingerprint})" in page


@pytest.mark.django_db
def test_saving_a_host_again_keeps_its_stored_key(ada: Client, key: GeneratedKey) -> None:
    ada.post(reverse("admin:runs_host_add"), host_form(new_private_key=key.private_text))
    host = Host.objects.get(name="lab2")

    response = ada.post(reverse("admin:runs_host_change", args=[host.pk]), host_form(notes="rack 3"))

    assert response.status_code == 302
    host.refresh_from_db()
    assert host.notes == "rack 3"
    assert decrypt_private_key(host.private_key_encrypted) == key.private_text


@pytest.mark.django_db
def test_an_admin_can_forget_a_stored_key_and_use_a_path_instead(ada: Client, key: GeneratedKey) -> None:
    ada.post(reverse("admin:runs_host_add"), host_form(new_private_key=key.private_text))
    host = Host.objects.get(name="lab2")

    ada.post(
        reverse("admin:runs_host_change", args=[host.pk]),
        host_form(forget_private_key="on", private_key_path="/etc/benchlab/lab2.key"),
    )

    host.refresh_from_db()
    assert host.private_key_encrypted == ""
    assert host.private_key_path == "/etc/benchlab/lab2.key"


@pytest.mark.django_db
def test_storing_a_key_without_credentials_key_is_a_form_error(ada: Client, key: GeneratedKey) -> None:
    with override_settings(CREDENTIALS_KEY=None):
        response = ada.post(reverse("admin:runs_host_add"), host_form(new_private_key=key.private_text))

    assert response.status_code == 200
    assert "storing private keys needs CREDENTIALS_KEY" in response.content.decode()
    assert not Host.objects.filter(name="lab2").exists()


@pytest.mark.django_db
def test_a_form_shown_again_with_errors_does_not_echo_the_pasted_key(ada: Client, key: GeneratedKey) -> None:
    response = ada.post(reverse("admin:runs_host_add"), host_form(name="bad name!", new_private_key=key.private_text))

    assert response.status_code == 200
    assert "Use letters, digits" in response.content.decode()
    assert key.private_text.splitlines()[1] not in response.content.decode()


@pytest.mark.django_db
def test_a_garbage_key_is_refused_beside_its_field(ada: Client) -> None:
    response = ada.post(reverse("admin:runs_host_add"), host_form(new_private_key="-----BEGIN nonsense"))

    assert response.status_code == 200
    assert "not a private key paramiko can read" in response.content.decode()


@pytest.mark.django_db
def test_the_host_page_shows_pinned_key_fingerprints(ada: Client, key: GeneratedKey) -> None:
    host = make_host(host_keys=" ".join(key.public_line.split()[:2]))

    page = ada.get(reverse("admin:runs_host_change", args=[host.pk])).content.decode()

    assert key.fingerprint in page


@pytest.mark.django_db
def test_discovered_facts_are_shown_but_not_editable(ada: Client) -> None:
    host = make_host(cpu_model="AMD EPYC 7B13", cpu_cores=2, kernel="6.18.0", probed_at=timezone.now())

    page = ada.get(reverse("admin:runs_host_change", args=[host.pk])).content.decode()
    response = ada.post(
        reverse("admin:runs_host_change", args=[host.pk]),
        host_form(name="lab1", private_key_path="/root/.ssh/id_ed25519", notes="saved", cpu_model="forged"),
    )

    assert response.status_code == 302
    assert "AMD EPYC 7B13" in page
    assert 'name="cpu_model"' not in page
    host.refresh_from_db()
    assert host.notes == "saved"
    assert host.cpu_model == "AMD EPYC 7B13"


@pytest.mark.django_db
def test_host_list_searches_filters_and_counts_devices(ada: Client) -> None:
    lab1, lab2 = make_host(), make_host(name="lab2", address="10.200.0.12", enabled=False)
    make_device(lab1)
    make_device(lab1, name="hdd0", kind="hdd", path="/dev/disk/by-id/ata-HDD")

    searched = ada.get(reverse("admin:runs_host_changelist"), {"q": "10.200.0.12"}).context["cl"]
    disabled = ada.get(reverse("admin:runs_host_changelist"), {"enabled__exact": "0"}).context["cl"]
    everything = ada.get(reverse("admin:runs_host_changelist")).context["cl"]

    assert list(searched.queryset) == [lab2]
    assert list(disabled.queryset) == [lab2]
    assert {h.name: h.device_total for h in everything.queryset} == {"lab1": 2, "lab2": 0}


@pytest.mark.django_db
def test_devices_and_installs_are_edited_inline_on_the_host(ada: Client) -> None:
    host = make_host()
    make_device(host, name="ssd0")
    make_pg_install(host, label="PG 15")

    page = ada.get(reverse("admin:runs_host_change", args=[host.pk])).content.decode()

    assert 'name="devices-0-name"' in page and 'value="ssd0"' in page
    assert 'name="pg_installs-0-bin_dir"' in page


@pytest.mark.django_db
def test_the_bulk_action_only_ever_forbids_wiping(ada: Client) -> None:
    host = make_host()
    device = make_device(host, wipe_allowed=True)

    ada.post(reverse("admin:runs_device_changelist"), {"action": "forbid_wiping", "_selected_action": [device.pk]})

    device.refresh_from_db()
    assert device.wipe_allowed is False
    assert action_names(ada, "admin:runs_device_changelist") == {"delete_selected", "forbid_wiping"}


def action_names(client: Client, changelist: str) -> set[str]:
    response = client.get(reverse(changelist))
    assert response.status_code == 200
    action_form = response.context["action_form"]  # None when the user may use no action
    return {name for name, _ in action_form.fields["action"].choices if name} if action_form else set()


@pytest.mark.django_db
def test_host_actions_need_the_change_permission() -> None:
    # Staff who may only look at hosts must not probe them, pin their keys or switch them.
    looker = make_user("looker")
    looker.is_staff = True
    looker.save()
    looker.user_permissions.add(Permission.objects.get(codename="view_host"))
    client = Client()
    client.force_login(looker)

    assert action_names(client, "admin:runs_host_changelist") == set()
    client.post(
        reverse("admin:runs_host_changelist"), {"action": "disable_hosts", "_selected_action": [make_host().pk]}
    )
    assert Host.objects.get().enabled is True


def test_an_admin_sees_which_run_holds_a_host(ada: Client) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state="measuring")
    Host.objects.filter(pk=host.pk).update(claimed_by=run)

    page = ada.get(reverse("admin:runs_host_changelist")).content.decode()
    Host.objects.filter(pk=host.pk).update(claimed_by=None, cleanup_pending_for=run)
    pending = ada.get(reverse("admin:runs_host_changelist")).content.decode()

    assert f"busy with run {run.pk} (measuring)" in page
    assert f"cleanup pending (run {run.pk}, host unreachable)" in pending


@pytest.mark.django_db
def test_device_list_filters_by_kind_and_wipeability(ada: Client) -> None:
    host = make_host()
    ssd = make_device(host, wipe_allowed=True)
    make_device(host, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-HDD")

    changelist = ada.get(reverse("admin:runs_device_changelist"), {"kind": "ssd", "wipe_allowed__exact": "1"})

    assert list(changelist.context["cl"].queryset) == [ssd]


@pytest.mark.django_db
def test_the_install_list_shows_and_filters_installs_a_probe_found_missing(ada: Client) -> None:
    host = make_host()
    make_pg_install(host, label="PG 15 there")
    gone = make_pg_install(host, bin_dir="/var/lib/benchlab/builds/pg-15-b4k/bin", label="PG 15 gone")
    gone.missing_since = timezone.now()
    gone.save()
    changelist = reverse("admin:runs_pginstall_changelist")

    listed = ada.get(changelist).content.decode()
    only_missing = ada.get(changelist, {"missing_since__isempty": "0"}).content.decode()

    assert "Missing since" in listed
    assert "PG 15 gone" in only_missing and "PG 15 there" not in only_missing
