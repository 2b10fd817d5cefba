import stat
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings

from runs.models import AuditAction, AuditEvent, Device, Host
from runs.tests.factories import make_host


def run(command: str) -> str:
    return run_with(command)


def run_with(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_ensure_admin_keeps_a_generated_password_in_a_root_only_file_not_in_its_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("BENCHLAB_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("BENCHLAB_ADMIN_USER", raising=False)

    with override_settings(VAR_DIR=tmp_path):
        first, second = run("ensure_admin"), run("ensure_admin")

    password_file = tmp_path / "admin_password"
    password = password_file.read_text().strip()
    admin = User.objects.get(username="admin")
    assert admin.check_password(password)
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert password not in first and str(password_file) in first
    assert admin.is_superuser and admin.groups.filter(name="admin").exists()
    assert "unchanged" in second and password not in second
    assert User.objects.filter(username="admin").count() == 1


@pytest.mark.django_db
def test_ensure_admin_takes_the_password_from_the_environment_and_never_resets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BENCHLAB_ADMIN_USER", "labadmin")
    monkeypatch.setenv("BENCHLAB_ADMIN_PASSWORD", "correct horse battery")
    output = run("ensure_admin")
    monkeypatch.setenv("BENCHLAB_ADMIN_PASSWORD", "another one")
    run("ensure_admin")

    assert "correct horse battery" not in output
    assert User.objects.get(username="labadmin").check_password("correct horse battery")


@pytest.mark.django_db
def test_register_local_host_adds_this_machine_once() -> None:
    run("register_local_host")
    Host.objects.filter(name="this-machine").update(notes="kept by the admin")
    output = run("register_local_host")

    host = Host.objects.get(name="this-machine")
    assert host.transport == Host.Transport.LOCAL
    assert host.notes == "kept by the admin"
    assert "Already registered" in output


@pytest.mark.django_db
def test_register_local_host_moves_the_device_out_of_var_and_records_allowing_runs() -> None:
    host = Host.objects.create(name="this-machine", transport=Host.Transport.LOCAL, address="localhost")
    old = Device.objects.create(host=host, name="var-dir", kind="virtual", path=str(settings.VAR_DIR / "local-device"))

    output = run_with("register_local_host", "--allow-runs")

    old.refresh_from_db()
    assert (old.name, old.path) == ("local-dir", str(settings.LOCAL_DEVICE_DIR))
    assert "Moved this machine's device" in output
    event = AuditEvent.objects.get(message__contains="--allow-runs")
    assert (event.action, event.actor_name, event.object_repr) == (
        AuditAction.INVENTORY_CHANGED,
        "benchlab",
        "this-machine",
    )


@pytest.mark.django_db
def test_the_health_command_fails_when_a_component_is_down() -> None:
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"), pytest.raises(CommandError, match="degraded"):
        run("health")


@pytest.mark.django_db
def test_probe_host_names_the_hosts_it_knows_when_given_one_it_does_not() -> None:
    make_host(name="lab1")

    with pytest.raises(CommandError, match=r"^no host named lab9 in the inventory \(hosts: lab1\)$"):
        call_command("probe_host", "lab1", "lab9", stdout=StringIO())
    assert not AuditEvent.objects.exists()  # not even lab1 was probed
