"""Put the virtual lab (scripts/lab) into the inventory: its hosts with pinned host keys, their
disks as wipeable devices, and — through a probe of each host — their PostgreSQL installs."""

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.inventory.services.probe import host_probe
from runs.lab.errors import LabError
from runs.models import Device, Host

KINDS = {"ssd": Device.Kind.SSD, "hdd": Device.Kind.HDD, "ram": Device.Kind.RAM}
DESCRIPTIONS = {
    "ssd": "loop device over an image on the machine's disk",
    "hdd": "loop device over a FUSE filesystem that delays each I/O like a 7200 rpm disk",
    "ram": "loop device over an image in /dev/shm",
}


def lab_host_name(lab_id: int, name: str) -> str:
    return name if lab_id == 0 else f"lab{lab_id}-{name}"


class Command(BaseCommand):
    help = "Register the hosts and disks of a running virtual lab (scripts/lab up) in the inventory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--id", type=int, default=0, help="the lab number given to scripts/lab (default 0)")
        parser.add_argument("--no-probe", action="store_true", help="do not probe the hosts")

    def handle(self, *args: Any, **options: Any) -> None:
        lab_id: int = options["id"]
        state_file = Path(settings.VAR_DIR) / "lab" / str(lab_id) / "state.json"
        if not state_file.exists():
            raise CommandError(f"lab {lab_id} is not up ({state_file} is missing): run `scripts/lab --id {lab_id} up`")
        state = json.loads(state_file.read_text())
        for lab_host in state["hosts"]:
            host, created = Host.objects.update_or_create(
                name=lab_host_name(lab_id, lab_host["name"]),
                defaults={
                    "address": lab_host["address"],
                    "ssh_port": 22,
                    "ssh_user": "root",
                    "transport": Host.Transport.SSH,
                    "host_keys": lab_host["host_key_pub"],
                    "private_key_path": state["client_key"],
                    "private_key_encrypted": "",
                    "private_key_fingerprint": "",
                    "serves_postgres": True,
                    "runs_clients": True,
                    "enabled": True,
                    "notes": f"Virtual lab {lab_id} (scripts/lab): network namespace {lab_host['namespace']}.",
                },
            )
            for kind, disk in lab_host["disks"].items():
                Device.objects.update_or_create(
                    host=host,
                    name=kind,
                    defaults={
                        "kind": KINDS[kind],
                        "path": disk["link"],
                        "capacity_bytes": disk["size_bytes"],
                        "model": f"benchlab virtual {kind.upper()}",
                        "wipe_allowed": True,
                        "notes": f"Virtual lab: {DESCRIPTIONS[kind]}.",
                    },
                )
            verb = "Registered" if created else "Updated"
            self.stdout.write(f"{verb} {host.name} ({host.address}) with {len(lab_host['disks'])} devices.")
            if not options["no_probe"]:
                try:
                    facts = host_probe(host=host)
                except LabError as exc:
                    raise CommandError(f"probing {host.name} failed: {exc}") from exc
                installs = ", ".join(f"{pg.version} ({pg.block_size // 1024} kB)" for pg in facts.pg_installs)
                self.stdout.write(f"  probed: {facts.cpu_cores} cores, kernel {facts.kernel}; PostgreSQL {installs}")
