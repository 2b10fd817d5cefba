from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings

from runs.models import Host


def run(command: str) -> str:
    out = StringIO()
    call_command(command, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_ensure_admin_prints_a_generated_password_once_and_it_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHLAB_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("BENCHLAB_ADMIN_USER", raising=False)

    first, second = run("ensure_admin"), run("ensure_admin")

    password = first.split("password: ")[1].split()[0]
    admin = User.objects.get(username="admin")
    assert admin.check_password(password)
    assert admin.is_superuser and admin.groups.filter(name="admin").exists()
    assert "password" in second and password not in second
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
def test_the_health_command_fails_when_a_component_is_down() -> None:
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"), pytest.raises(CommandError, match="degraded"):
        run("health")
