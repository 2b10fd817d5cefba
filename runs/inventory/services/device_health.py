"""A device's SMART/NVMe health stored as a reading (runs.models.DeviceHealthReading): after a run
on it is collected (the worker passes what runs.lab.host.smart read), or when an operator asks on
the device page: the request only claims and queues it (`device_health_ask`), a worker reads it
(`device_health_read`, through a short connection to its host) while the page says it is under way."""

from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from runs.common.services.audit import audit_record
from runs.inventory.selectors import HEALTH_READ_BOUND
from runs.inventory.services.connect import host_connected
from runs.jobs.dispatch import send_on_commit
from runs.lab.errors import LabError
from runs.lab.host.smart import read_smart
from runs.lab.parse.smart import SmartHealth
from runs.models import AuditAction, Device, DeviceHealthReading, HealthSource, Run

CONNECT_TIMEOUT_S = 10.0  # a worker waits, not the operator; the page says "under way" meanwhile
READ_TASK = "runs.read_device_health"  # runs.tasks.read_device_health, sent by name


class HealthUnread(Exception):
    """The health cannot be asked for now (the host is busy, a reading is under way); str() says why."""


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


def device_health_ask(*, device: Device, request: HttpRequest) -> datetime:
    """ "Read health now": checked, claimed (one reading at a time per device), audited, and handed to a
    worker once committed (runs.tasks.read_device_health); when it was asked. Raises HealthUnread."""
    refusal = device_health_refusal(device)
    if refusal:
        raise HealthUnread(refusal)
    asked_at = timezone.now()
    with transaction.atomic():
        _claim_the_reading(device, asked_at)
        audit_record(action=AuditAction.DEVICE_HEALTH_READ, target=device, request=request, message="reading asked")
        send_on_commit(READ_TASK, device.pk)
    device.health_asked_at = asked_at
    return asked_at


def _claim_the_reading(device: Device, asked_at: datetime) -> None:
    """One conditional UPDATE: a second click while a reading is under way queues nothing. One asked
    longer than HEALTH_READ_BOUND ago counts as failed and may be asked again."""
    free = Q(health_asked_at__isnull=True) | Q(health_asked_at__lt=asked_at - HEALTH_READ_BOUND)
    if not Device.objects.filter(free, pk=device.pk).update(health_asked_at=asked_at):
        raise HealthUnread(f"a reading of {device} is already under way: it is shown here once stored.")


def device_health_read(device_id: int) -> str:
    """The worker's side of "Read health now": smartctl on the device's host, stored as a reading
    whatever happens (a reading that could not be taken says why), then the ask is cleared."""
    device = Device.objects.select_related("host").filter(pk=device_id).first()
    if device is None or device.health_asked_at is None:
        return "nothing asked"
    asked_at = device.health_asked_at
    health = _health_now(device)
    with transaction.atomic():
        health_reading_store(device=device, health=health, source=HealthSource.OPERATOR)
        # Only this ask: one asked again after this one overran is the next task's to clear.
        Device.objects.filter(pk=device.pk, health_asked_at=asked_at).update(health_asked_at=None)
    return health.none_reason or f"{health.protocol} health read"


def _health_now(device: Device) -> SmartHealth:
    """The health as read now, or a reading without figures saying why it could not be read."""
    refusal = device_health_refusal(device)  # a job may have claimed the host since the click
    if refusal:
        return SmartHealth(none_reason=f"not read: {refusal}")
    try:
        with host_connected(device.host, connect_timeout_s=CONNECT_TIMEOUT_S) as transport:
            return read_smart(transport, device.path)
    except LabError as exc:
        return SmartHealth(none_reason=f"could not read the health of {device}: {exc}")
