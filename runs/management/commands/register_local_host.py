"""Register the machine benchlab runs on as a lab host with the local transport."""

import socket
from typing import Any

from django.core.management.base import BaseCommand

from runs.models import Host

LOCAL_HOST_NAME = "this-machine"


class Command(BaseCommand):
    help = f"Add this machine to the inventory as host {LOCAL_HOST_NAME!r} (local transport), once."

    def handle(self, *args: Any, **options: Any) -> None:
        host, created = Host.objects.get_or_create(
            name=LOCAL_HOST_NAME,
            defaults={
                "transport": Host.Transport.LOCAL,
                "address": "localhost",
                "notes": f"The machine benchlab itself runs on ({socket.gethostname()}); registered by `make run`.",
            },
        )
        verb = "Registered" if created else "Already registered:"
        self.stdout.write(f"{verb} host {host.name!r} ({host.get_transport_display()}).")
