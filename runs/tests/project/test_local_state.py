"""`make run` a second time loses nothing: generated secrets, the database password, the admin's
password, the inventory and the data all stay what they were."""

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from runs.models import Host
from runs.tests.workers import database_url_for_tests

ROOT = Path(settings.BASE_DIR)


def fingerprints(var: Path, names: list[str]) -> dict[str, str]:
    return {name: hashlib.sha256((var / name).read_bytes()).hexdigest() for name in names}


def test_secrets_are_generated_once_privately_and_never_replaced(tmp_path: Path) -> None:
    # With DATABASE_URL set the script leaves the database alone, so this runs in a scratch var/.
    env = os.environ | {"BENCHLAB_VAR_DIR": str(tmp_path / "var"), "DATABASE_URL": "postgres://x@127.0.0.1/x"}
    first = subprocess.run(["scripts/setup-local-state"], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    before = fingerprints(tmp_path / "var", ["secret_key", "credentials_key"])

    again = subprocess.run(["scripts/setup-local-state"], cwd=ROOT, env=env, check=True, capture_output=True, text=True)

    assert "Generated" in first.stdout and "Generated" not in again.stdout
    assert fingerprints(tmp_path / "var", ["secret_key", "credentials_key"]) == before
    for name in ("secret_key", "credentials_key"):
        assert (tmp_path / "var" / name).stat().st_mode & 0o077 == 0, f"{name} must be private to its owner"


def test_the_database_role_and_its_password_survive_a_second_setup() -> None:
    var = Path(settings.VAR_DIR)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    subprocess.run(["scripts/setup-local-state"], cwd=ROOT, env=env, check=True, capture_output=True)
    before = fingerprints(var, ["db_password", "pgpass"])

    subprocess.run(["scripts/setup-local-state"], cwd=ROOT, env=env, check=True, capture_output=True)

    assert fingerprints(var, ["db_password", "pgpass"]) == before
    login = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "benchlab", "-d", "benchlab", "-tAc", "SELECT current_user"],
        env=env | {"PGPASSFILE": str(var / "pgpass")}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert login.stdout.strip() == "benchlab"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_preparing_twice_keeps_the_admin_the_inventory_and_the_data() -> None:
    env = os.environ | {"DATABASE_URL": database_url_for_tests(), "BENCHLAB_ADMIN_PASSWORD": "first-password-long"}
    subprocess.run(["scripts/prepare"], cwd=ROOT, env=env, check=True, capture_output=True)
    Host.objects.create(name="lab9", address="10.0.0.9", private_key_path="/k")

    second = subprocess.run(["scripts/prepare"], cwd=ROOT, env=env | {"BENCHLAB_ADMIN_PASSWORD": "other-password"},
                            check=True, capture_output=True, text=True)  # fmt: skip

    assert "exists; its password is unchanged" in second.stdout
    assert User.objects.get(username="admin").check_password("first-password-long")
    assert Host.objects.filter(name="this-machine").count() == 1
    assert Host.objects.filter(name="lab9").exists()
    # A new install does not run benchmarks on its own server; `make run`'s lab to try does.
    assert not Host.objects.get(name="this-machine").allow_runs_on_benchlab_server
    lab_to_try = {"BENCHLAB_RUNS_ON_THIS_MACHINE": "yes", "BENCHLAB_DEMO_USERS": "no"}  # no passwords file here
    subprocess.run(["scripts/prepare"], cwd=ROOT, env=env | lab_to_try, check=True, capture_output=True)
    assert Host.objects.get(name="this-machine").allow_runs_on_benchlab_server
