"""Create the first administrator if it does not exist; never touch an existing one.

A generated password goes into a file only root can read (var/admin_password), never onto
standard output: `make run` and containers keep their output in logs others may read.
"""

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from runs.common.roles import ADMIN


def admin_password_file() -> Path:
    return Path(settings.VAR_DIR) / "admin_password"


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode on open(): before writing
    with os.fdopen(descriptor, "w") as file:
        file.write(text + "\n")


class Command(BaseCommand):
    help = "Create the admin user (BENCHLAB_ADMIN_USER, BENCHLAB_ADMIN_PASSWORD) unless it exists."

    def handle(self, *args: Any, **options: Any) -> None:
        username = os.environ.get("BENCHLAB_ADMIN_USER", "admin")
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            self.stdout.write(f"Admin user {username!r} exists; its password is unchanged.")
            return
        given = os.environ.get("BENCHLAB_ADMIN_PASSWORD", "")  # empty counts as not given
        password = given or secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, email="", password=password)
        user.groups.add(Group.objects.get(name=ADMIN))
        if given:
            self.stdout.write(f"Created admin user {username!r} with the password from BENCHLAB_ADMIN_PASSWORD.")
            return
        # Stored only as a hash in the database; the file is the one copy of the plain text.
        password_file = admin_password_file()
        _write_private(password_file, password)
        self.stdout.write(
            self.style.WARNING(
                f"Created admin user {username!r}; its generated password is in {password_file} "
                "(readable by root only). Change it in the admin, then delete that file."
            )
        )
