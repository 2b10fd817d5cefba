"""Probe a host and store what it is: facts on the Host, its PostgreSQL installs (those found,
and those of the inventory that are gone: marked missing), and the identity of its devices
where the inventory has none yet (never overwriting a recorded one: the safety checks compare
against it)."""

from collections.abc import Collection
from dataclasses import asdict

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from runs.common.services.audit import audit_record
from runs.inventory.services.connect import host_connect
from runs.lab.host.probe import HostFacts, probe_host
from runs.lab.postgres.installs import installs_gone
from runs.lab.transport.interface import Transport
from runs.models import AuditAction, Device, Host, PgInstall


def host_probe(*, host: Host, transport: Transport | None = None, request: HttpRequest | None = None) -> HostFacts:
    """Probe the host and store what it is (an audited inventory change: installs may appear)."""
    connection = transport or host_connect(host)
    registered = PgInstall.objects.filter(host=host, removed_at__isnull=True).values_list("bin_dir", flat=True)
    try:
        facts = probe_host(connection)
        gone = installs_gone(connection, registered)
    finally:
        if transport is None:
            connection.close()
    host_store_facts(host=host, facts=facts, gone=gone)
    installs = ", ".join(f"{pg.version} ({pg.block_size // 1024} kB)" for pg in facts.pg_installs) or "none"
    missing = f"; missing: {', '.join(sorted(gone))}" if gone else ""
    audit_record(
        action=AuditAction.INVENTORY_CHANGED,
        target=host,
        request=request,
        message=f"probed: PostgreSQL {installs}{missing}",
    )
    return facts


@transaction.atomic
def host_store_facts(*, host: Host, facts: HostFacts, gone: Collection[str] = ()) -> None:
    """The facts on the host and its installs; `gone`: bin directories of its installs that hold
    no PostgreSQL any more (marked missing, and unmarked once a probe finds them again)."""
    host.hostname = facts.hostname
    host.cpu_model = facts.cpu_model
    host.cpu_cores = facts.cpu_cores
    host.memory_bytes = facts.memory_bytes
    host.kernel = facts.kernel
    host.distribution = facts.distribution
    host.facts = asdict(facts)
    host.probed_at = timezone.now()
    host.save()
    for install in facts.pg_installs:
        PgInstall.objects.update_or_create(
            host=host,
            bin_dir=install.bin_dir,
            defaults={
                "version": install.version,
                "block_size": install.block_size,
                "wal_block_size": install.wal_block_size,
            },
        )
    _mark_missing_installs(host, gone)
    _fill_device_identities(host, facts)


def _mark_missing_installs(host: Host, gone: Collection[str]) -> None:
    """Missing since the first probe that did not find it (the time stays while it is gone)."""
    installs = PgInstall.objects.filter(host=host, removed_at__isnull=True)
    installs.filter(bin_dir__in=gone, missing_since__isnull=True).update(missing_since=timezone.now())
    installs.exclude(bin_dir__in=gone).filter(missing_since__isnull=False).update(missing_since=None)


def _fill_device_identities(host: Host, facts: HostFacts) -> None:
    by_path = {str(d.get("path")): d for d in facts.block_devices}
    for device in Device.objects.filter(host=host):
        node = facts.by_id.get(device.path, device.path)
        found = by_path.get(node)
        if found is None:
            continue
        changed = []
        if device.capacity_bytes is None and found.get("size") is not None:
            device.capacity_bytes = int(str(found["size"]))
            changed.append("capacity_bytes")
        for field in ("model", "serial"):
            if not getattr(device, field) and found.get(field):
                setattr(device, field, str(found[field]).strip())
                changed.append(field)
        if changed:
            device.save(update_fields=[*changed, "updated_at"])
