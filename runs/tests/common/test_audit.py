"""The audit log: who did what and when, for queueing, cancelling, the inventory, credentials,
accounts, roles and API tokens; admins read it, filter it, and cannot change it.

(mkfs is recorded by the worker before it runs: test_run_execution checks it on a real run.)
"""

from ipaddress import ip_network
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, override_settings
from django.urls import reverse
from knox.models import AuthToken

from runs.models import AuditAction, AuditEvent, Host, Run, RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user, run_form_fields
from runs.tests.keys import generate_key

pytestmark = pytest.mark.django_db


def logged_in(user: User, address: str = "10.1.2.3") -> Client:
    client = Client(REMOTE_ADDR=address)
    client.force_login(user)
    return client


def only_event() -> AuditEvent:
    events = list(AuditEvent.objects.all())
    assert len(events) == 1, events
    return events[0]


def host_form(host: Host, **changes: object) -> dict[str, object]:
    """The host's admin form as posted, unchanged but for `changes` (inlines left empty)."""
    fields = {
        "name": host.name,
        "address": host.address,
        "ssh_port": host.ssh_port,
        "ssh_user": host.ssh_user,
        "transport": host.transport,
        "host_keys": host.host_keys,
        "private_key_path": host.private_key_path,
        "serves_postgres": "on",
        "runs_clients": "on",
        "enabled": "on",
        "notes": host.notes,
    }
    inlines = {f"{prefix}-{key}": value for prefix in ("devices", "pg_installs") for key, value in
               (("TOTAL_FORMS", 0), ("INITIAL_FORMS", 0), ("MIN_NUM_FORMS", 0), ("MAX_NUM_FORMS", 1000))}  # fmt: skip
    return fields | inlines | changes


def test_queueing_is_recorded_with_who_when_and_from_where() -> None:
    host = make_host()
    otto = make_user("otto", "operator")
    body = run_form_fields(host, make_device(host, wipe_allowed=True, capacity_bytes=2**30), make_pg_install(host))

    logged_in(otto).post("/runs/new/", body)

    event, run = only_event(), Run.objects.get()
    assert (event.action, event.actor, event.actor_name) == (AuditAction.RUN_QUEUED, otto, "otto")
    assert (event.object_type, event.object_id, event.address) == ("run", str(run.pk), "10.1.2.3")
    assert "lab1:ssd0 ext4" in event.message


@override_settings(CLIENT_IP_HEADER="X-Real-IP", TRUSTED_PROXIES=(ip_network("10.0.0.1"),))
def test_behind_a_proxy_the_address_is_the_one_the_proxy_names() -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    client = Client(REMOTE_ADDR="10.0.0.1", headers={"X-Real-IP": "192.0.2.7"})
    client.force_login(make_user("ada", "admin"))

    client.post(reverse("run-cancel", args=[run.pk]))

    assert only_event().address == "192.0.2.7"


def test_an_ipv6_address_with_a_zone_is_recorded_without_it() -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    client = Client(REMOTE_ADDR="fe80::1%eth0")
    client.force_login(make_user("ada", "admin"))

    client.post(reverse("run-cancel", args=[run.pk]))

    assert only_event().address == "fe80::1"


def test_a_refused_queue_form_records_nothing() -> None:
    host = make_host()
    body = run_form_fields(host, make_device(host), make_pg_install(host), scale=0)

    response = logged_in(make_user("otto", "operator")).post("/runs/new/", body)

    assert response.status_code == 400
    assert not AuditEvent.objects.exists()


def test_cancelling_is_recorded_and_a_refused_cancel_is_not() -> None:
    host = make_host()
    otto, olga = make_user("otto", "operator"), make_user("olga", "operator")
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED, queued_by=otto)

    refused = logged_in(olga).post(reverse("run-cancel", args=[run.pk]))
    logged_in(otto).post(reverse("run-cancel", args=[run.pk]))

    assert refused.status_code == 403
    event = only_event()
    assert (event.action, event.actor_name, event.object_id) == (AuditAction.RUN_CANCELLED, "otto", str(run.pk))


def test_inventory_changes_in_the_admin_are_recorded_with_the_fields_changed() -> None:
    ada = make_user("ada", "admin")
    host = make_host()

    logged_in(ada).post(reverse("admin:runs_host_change", args=[host.pk]), host_form(host, notes="rack 4"))

    event = only_event()
    assert (event.action, event.actor_name, event.object_repr) == (AuditAction.INVENTORY_CHANGED, "ada", "lab1")
    assert event.message == "Changed Notes."


def test_a_new_private_key_is_a_credentials_change_and_the_key_is_not_in_the_log(tmp_path: Path) -> None:
    ada = make_user("ada", "admin")
    host = make_host()
    private_key = generate_key(tmp_path).private_text

    logged_in(ada).post(
        reverse("admin:runs_host_change", args=[host.pk]),
        host_form(host, private_key_path="", new_private_key=private_key),
    )

    event = only_event()
    assert event.action == AuditAction.CREDENTIALS_CHANGED
    assert "Store a private key" in event.message and private_key.splitlines()[1] not in event.message


def test_deleting_a_device_and_bulk_actions_are_recorded_per_object() -> None:
    ada = make_user("ada", "admin")
    host = make_host()
    first, second = make_device(host, wipe_allowed=True), make_device(host, name="ssd1", path="/dev/disk/by-id/x1")
    client = logged_in(ada)

    client.post(
        reverse("admin:runs_device_changelist"),
        {"action": "forbid_wiping", "_selected_action": [first.pk, second.pk]},
    )
    client.post(reverse("admin:runs_device_delete", args=[second.pk]), {"post": "yes"})

    events = list(AuditEvent.objects.order_by("id").values_list("action", "object_repr", "message"))
    assert events == [
        (AuditAction.INVENTORY_CHANGED, "lab1:ssd0", "wipe_allowed = False"),  # ssd1 was not wipeable
        (AuditAction.INVENTORY_DELETED, "lab1:ssd1", "deleted"),
    ]


def test_giving_someone_a_role_is_recorded_as_a_role_change() -> None:
    root = User.objects.create_superuser("root", password=None)
    vera = make_user("vera", "viewer")
    form = {
        "username": "vera",
        "is_active": "on",
        "groups": [Group.objects.get(name="operator").pk],
        "date_joined_0": "2026-11-01",
        "date_joined_1": "10:00:00",
        "initial-date_joined_0": "2026-11-01",
        "initial-date_joined_1": "10:00:00",
    }

    response = logged_in(root).post(reverse("admin:auth_user_change", args=[vera.pk]), form)

    assert response.status_code == 302, response.content.decode()[:2000]
    event = only_event()
    assert (event.action, event.actor_name, event.object_repr) == (AuditAction.ROLES_CHANGED, "root", "vera")
    assert "Groups" in event.message


def test_issuing_and_revoking_an_api_token_is_recorded_without_the_token() -> None:
    root = User.objects.create_superuser("root", password=None)
    vera = make_user("vera", "viewer")
    client = logged_in(root)

    page = client.post("/admin/knox/authtoken/add/", {"user": vera.pk, "expiry": ""}, follow=True).content.decode()
    token = AuthToken.objects.get(user=vera)
    client.post(reverse("admin:knox_authtoken_delete", args=[token.pk]), {"post": "yes"})

    issued, revoked = AuditEvent.objects.order_by("id")
    assert (issued.action, revoked.action) == (AuditAction.API_TOKEN_CREATED, AuditAction.API_TOKEN_REVOKED)
    assert issued.object_repr == f"token {token.token_key}… of vera" and "TOKEN " in page
    shown = page.split("TOKEN ", 1)[1].split("<", 1)[0].strip()
    assert all(shown not in text for text in (issued.object_repr, issued.message, revoked.message))


def result_table(page: str) -> str:
    """The admin list's table of results, without its filters."""
    return page.split('id="result_list"', 1)[1].split("</table>", 1)[0]


def test_admins_read_and_filter_the_log_but_nobody_can_change_it() -> None:
    ada = make_user("ada", "admin")
    otto = make_user("otto", "operator")
    host = make_host()
    for action, name in ((AuditAction.RUN_QUEUED, "otto"), (AuditAction.INVENTORY_CHANGED, "ada")):
        AuditEvent.objects.create(actor_name=name, action=action, object_type="host", object_repr=host.name)
    client = logged_in(ada)

    everything = result_table(client.get(reverse("admin:runs_auditevent_changelist")).content.decode())
    filtered = result_table(
        client.get(reverse("admin:runs_auditevent_changelist"), {"action__exact": "run_queued"}).content.decode()
    )
    event = AuditEvent.objects.get(action=AuditAction.INVENTORY_CHANGED)
    edit = client.post(reverse("admin:runs_auditevent_change", args=[event.pk]), {"actor_name": "someone else"})

    assert "run queued" in everything and "inventory: changed" in everything
    assert "run queued" in filtered and "inventory: changed" not in filtered
    assert edit.status_code == 403 and AuditEvent.objects.get(pk=event.pk).actor_name == "ada"
    assert logged_in(otto).get(reverse("admin:runs_auditevent_changelist"), follow=True).status_code == 403


def test_changing_ones_own_password_is_recorded_without_the_password() -> None:
    otto = make_user("otto", "operator", password="otto-old-long-password")

    response = logged_in(otto).post(
        reverse("password_change"),
        {
            "old_password": "otto-old-long-password",
            "new_password1": "otto-new-long-password",
            "new_password2": "otto-new-long-password",
        },
    )

    assert response.status_code == 302
    event = only_event()
    assert (event.action, event.actor_name, event.object_repr) == (AuditAction.CREDENTIALS_CHANGED, "otto", "otto")
    assert event.message == "changed their own password"


def test_a_device_changed_on_its_hosts_page_gets_a_row_of_its_own() -> None:
    ada = make_user("ada", "admin")
    host = make_host()
    device = make_device(host)
    inline = {
        "devices-TOTAL_FORMS": 1,
        "devices-INITIAL_FORMS": 1,
        "devices-0-id": device.pk,
        "devices-0-host": host.pk,
        "devices-0-name": device.name,
        "devices-0-kind": device.kind,
        "devices-0-path": device.path,
        "devices-0-wipe_allowed": "on",
    }

    response = logged_in(ada).post(reverse("admin:runs_host_change", args=[host.pk]), host_form(host) | inline)

    assert response.status_code == 302, response.content.decode()[:3000]
    on_device = AuditEvent.objects.get(object_type="device")
    assert (on_device.action, on_device.object_id) == (AuditAction.INVENTORY_CHANGED, str(device.pk))
    assert on_device.message == "Changed Wipe allowed (inline)."


def test_deleting_a_host_records_the_devices_and_installs_it_takes_along() -> None:
    ada = make_user("ada", "admin")
    host = make_host()
    make_device(host)
    make_pg_install(host)

    logged_in(ada).post(reverse("admin:runs_host_delete", args=[host.pk]), {"post": "yes"})

    event = only_event()
    assert event.action == AuditAction.INVENTORY_DELETED
    assert (
        event.message
        == "deleted, with its devices (ssd0) and PostgreSQL installs (PostgreSQL 15.19 (8 kB pages) on lab1)"
    )
