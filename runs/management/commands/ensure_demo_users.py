"""Create the named users of `make run`'s ready lab, one per role, if they do not exist; never
touch an existing one.

With only "admin", every run a demo queues reads "by admin", and nobody sees what an operator or
a viewer may do. Their generated passwords go, like admin's, into a file only root can read
(var/demo_passwords), never onto standard output.
"""

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from runs.common.roles import OPERATOR, VIEWER
from runs.management.commands.ensure_admin import _write_private

# Who they are: two operators (so "whose run is it?" has two answers) and a viewer.
DEMO_USERS = (
    ("olga", OPERATOR, "Olga", "Operator"),
    ("oskar", OPERATOR, "Oskar", "Operator"),
    ("vera", VIEWER, "Vera", "Viewer"),
)


def demo_password_file() -> Path:
    return Path(settings.VAR_DIR) / "demo_passwords"


class Command(BaseCommand):
    help = "Create the demo users olga and oskar (operators) and vera (viewer) unless they exist."

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        noted = _noted_passwords()
        lines, created = [], []
        for username, role, first_name, last_name in DEMO_USERS:
            user = User.objects.filter(username=username).first()
            if user is not None:
                self.stdout.write(f"Demo user {username!r} exists; its password is unchanged.")
                # Noted only while it is still the password (not one of another database's user).
                if username in noted and user.check_password(noted[username]):
                    lines.append(f"{username} {role} {noted[username]}")
                continue
            password = secrets.token_urlsafe(12)
            user = User.objects.create_user(username, password=password, first_name=first_name, last_name=last_name)
            user.groups.add(Group.objects.get(name=role))
            lines.append(f"{username} {role} {password}")
            created.append(f"{username} ({role})")
        if lines or demo_password_file().exists():
            _write_private(demo_password_file(), "\n".join(lines))
        if created:
            self.stdout.write(
                self.style.WARNING(
                    f"Created demo users {', '.join(created)}; their generated passwords are in "
                    f"{demo_password_file()} (readable by root only, a line 'user role password' each)."
                )
            )


def _noted_passwords() -> dict[str, str]:
    """The passwords var/demo_passwords notes, by user name."""
    path = demo_password_file()
    words = [line.split() for line in path.read_text().splitlines()] if path.exists() else []
    return {parts[0]: parts[2] for parts in words if len(parts) == 3}
