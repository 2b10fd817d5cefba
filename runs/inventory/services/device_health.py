"""A device's SMART/NVMe health stored as a reading (runs.models.DeviceHealthReading): after a run
on it is collected (the worker passes what runs.lab.host.smart read), or when an operator asks on
the device page (read here, through a short connection to its host)."""

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from runs.common.services.audit import audit_record
from runs.inventory.services.connect import host_connected
from runs.lab.errors import LabError
from runs.lab.host.smart import read_smart
from runs.lab.parse.smart import SmartHealth
from runs.models import AuditAction, Device, DeviceHealthReading, HealthSource, Run

CONNECT_TIMEOUT_S = 5.0  # the operator waits on the page for a host that does not answer


class HealthUnread(Exception):
    """The health could not be read (the host is busy or does not answer); str() says why."""


def health_reading_store(
    *, device: Device, health: SmartHealth, source: HealthSource, run: Run | None = None
) -> DeviceHealthReading:
    """One reading; a run's own is stored once however often its results are (a retry replaces it)."""
    fields = {"read_at": timezone.now(), "none_reason": health.none_reason[:500], "raw": health.raw, **health.figures()}
    if run is not None:
        reading, _ = DeviceHealthReading.objects.update_or_create(
            device=device, run=run, source=source, defaults=fields
        )
        return reading
    return DeviceHealthReading.objects.create(device=device, source=source, **fields)


def device_health_refusal(device: Device) -> str | None:
    """Why the health cannot be read now (None: it can). A job on the host is measuring: smartctl
    wakes the drive and adds its own I/O, so it waits for the job's end."""
    if not device.is_block_device:
        return f"{device} is a directory device: only a block device has SMART data."
    host = device.host
    busy = [
        f"{kind} {pk}"
        for kind, pk in (
            ("run", host.claimed_by_id),
            ("PostgreSQL build", host.claimed_by_build_id),
            ("fio baseline", host.claimed_by_baseline_id),
        )
        if pk
    ]
    if busy:
        return f"{host.name} is busy with {busy[0]}: read the health after it ends (smartctl would disturb it)."
    return None


def device_health_read(*, device: Device, request: HttpRequest) -> DeviceHealthReading:
    """Read the device's health now (smartctl on its host), store and audit it. Raises HealthUnread."""
    refusal = device_health_refusal(device)
    if refusal:
        raise HealthUnread(refusal)
    try:
        with host_connected(device.host, connect_timeout_s=CONNECT_TIMEOUT_S) as transport:
            health = read_smart(transport, device.path)
    except LabError as exc:
        raise HealthUnread(f"could not read the health of {device}: {exc}") from exc
    with transaction.atomic():
        reading = health_reading_store(device=device, health=health, source=HealthSource.OPERATOR)
        audit_record(
            action=AuditAction.DEVICE_HEALTH_READ,
            target=device,
            request=request,
            message=health.none_reason or f"{health.protocol} health read",
        )
    return reading
