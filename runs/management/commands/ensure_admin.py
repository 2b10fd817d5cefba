"""Create the first administrator if it does not exist; never touch an existing one."""

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from runs.roles import ADMIN


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
        else:
            # Printed once, now: it is stored only as a hash.
            self.stdout.write(self.style.WARNING(f"Created admin user {username!r} with password: {password}"))
            self.stdout.write("Write it down: it will not be shown again (change it in the admin).")
