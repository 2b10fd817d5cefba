"""`make run` a second time loses nothing: the generated secrets and the database password
stay what they were, and the database role still accepts them."""

import hashlib
import os
import subprocess
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
STATE_FILES = ["secret_key", "credentials_key", "db_password", "pgpass"]


def fingerprints(var: Path) -> dict[str, str]:
    return {name: hashlib.sha256((var / name).read_bytes()).hexdigest() for name in STATE_FILES}


def test_setting_up_local_state_again_changes_nothing() -> None:
    var = ROOT / "var"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    subprocess.run(["scripts/setup-local-state"], cwd=ROOT, env=env, check=True, capture_output=True)
    before = fingerprints(var)

    again = subprocess.run(["scripts/setup-local-state"], cwd=ROOT, env=env, check=True, capture_output=True, text=True)

    assert fingerprints(var) == before
    assert "Generated" not in again.stdout
    assert (var / "secret_key").stat().st_mode & 0o077 == 0, "secrets must be private to their owner"
    login = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "benchlab", "-d", "benchlab", "-tAc", "SELECT current_user"],
        env=env | {"PGPASSFILE": str(var / "pgpass")}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert login.stdout.strip() == "benchlab"
