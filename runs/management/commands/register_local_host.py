"""Register the machine benchlab runs on as a lab host with the local transport, with a
directory-backed device (LOCAL_DEVICE_DIR, /srv/benchlab/this-machine) so a first small run
needs no spare disk.

Runs on benchlab's own server are off unless asked for (--allow-runs, which `make run`'s
ready-to-try lab passes): a benchmark there shares the machine with benchlab's database.
"""

import socket
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from runs.common.services.audit import audit_record
from runs.inventory.services.connect import host_connect
from runs.inventory.services.own_server import own_server_assert_closed
from runs.inventory.services.probe import host_probe
from runs.lab.errors import LabError
from runs.models import AuditAction, Device, Host

LOCAL_HOST_NAME = "this-machine"
LOCAL_DEVICE_NAME = "local-dir"
# Where earlier versions kept it: inside benchlab's own var/, which a device may not be now.
OLD_DEVICE_NAME, OLD_DEVICE_SUBDIR = "var-dir", "local-device"


def local_device_path() -> Path:
    return Path(settings.LOCAL_DEVICE_DIR)


class Command(BaseCommand):
    help = f"Add this machine to the inventory as host {LOCAL_HOST_NAME!r} (local transport), once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--allow-runs",
            action="store_true",
            help="allow runs on this machine (a demo or a single-machine lab); an admin can change it later",
        )

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
        if options["allow_runs"] and not host.allow_runs_on_benchlab_server:
            host.allow_runs_on_benchlab_server = True
            host.save(update_fields=["allow_runs_on_benchlab_server", "updated_at"])
            audit_record(
                action=AuditAction.INVENTORY_CHANGED,
                target=host,
                message="allow runs on benchlab's own server = True (register_local_host --allow-runs)",
            )
        allowed = "allowed" if host.allow_runs_on_benchlab_server else "not allowed (an admin can allow them)"
        self.stdout.write(f"Runs on {host.name}, benchlab's own server: {allowed}.")
        self._register_device(host)
        try:
            facts = host_probe(host=host)
        except LabError as exc:
            self.stdout.write(self.style.WARNING(f"Probing this machine failed: {exc}"))
            return
        installs = ", ".join(pg.version for pg in facts.pg_installs) or "none"
        self.stdout.write(f"Probed this machine: {facts.cpu_cores} cores; PostgreSQL installs: {installs}.")
        if host.allow_runs_on_benchlab_server:
            self._warn_if_services_let_the_run_user_in(host)

    def _warn_if_services_let_the_run_user_in(self, host: Host) -> None:
        """Said now, at `make run`, rather than at the first run, which would be refused."""
        try:
            own_server_assert_closed([(host, host_connect(host))])
        except LabError as exc:
            self.stdout.write(self.style.WARNING(f"Runs on this machine will be {exc}"))

    def _register_device(self, host: Host) -> None:
        directory = local_device_path()
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)
        old_path = str(Path(settings.VAR_DIR) / OLD_DEVICE_SUBDIR)
        moved = Device.objects.filter(host=host, name=OLD_DEVICE_NAME, path=old_path)
        if moved.update(name=LOCAL_DEVICE_NAME, path=str(directory)):
            self.stdout.write(f"Moved this machine's device from {old_path} to {directory}.")
        Device.objects.get_or_create(
            host=host,
            name=LOCAL_DEVICE_NAME,
            defaults={
                "kind": Device.Kind.VIRTUAL,
                "path": str(directory),
                "notes": "A directory on this machine's own disk: runs use it as it is, nothing is formatted.",
            },
        )
