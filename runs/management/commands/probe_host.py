"""Probe lab hosts again and store what they are (as the admin's “Probe now” does): after a host
was rebuilt, its installs that are gone are marked missing, and those found again unmarked."""

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.inventory.services.probe import host_probe
from runs.lab.errors import LabError
from runs.models import Host


class Command(BaseCommand):
    help = "Probe the named hosts (hardware, disks, PostgreSQL installs) and update the inventory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("hosts", nargs="+", metavar="HOST", help="a host's name in the inventory")

    def handle(self, *args: Any, **options: Any) -> None:
        names: list[str] = options["hosts"]
        hosts = {host.name: host for host in Host.objects.filter(name__in=names)}
        if unknown := [name for name in names if name not in hosts]:
            known = ", ".join(Host.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"no host named {', '.join(unknown)} in the inventory (hosts: {known})")
        for name in names:
            try:
                facts = host_probe(host=hosts[name])
            except (LabError, ValidationError) as exc:
                raise CommandError(f"probing {name} failed: {exc}") from exc
            installs = ", ".join(f"{pg.version} in {pg.bin_dir}" for pg in facts.pg_installs) or "none"
            self.stdout.write(f"{name}: probed; PostgreSQL installs found: {installs}")
            for install in hosts[name].pg_installs.filter(missing_since__isnull=False, removed_at__isnull=True):
                self.stdout.write(f"  {install.bin_dir}: {install.missing_note}")
