"""Writes to raw device baselines (fio): queue one, move it through its states. Cancelling one
is runs.jobs.cancel; running one, baselines.services.execute; a dead worker's,
baselines.services.sweeper.

The settings are the lab layer's FioSettings and checked by its own rules (runs/lab/fio_plan),
field by field. A device fio may not write is refused before anything is queued: a block
device is measured raw, which the lab layer allows only on a device the inventory lets
benchlab wipe (runs.lab.fio.run); a directory device is measured through a file in it.
"""

import logging
from dataclasses import fields as dataclass_fields
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from runs.common.services.audit import audit_record
from runs.jobs.dispatch import queue_on_commit
from runs.lab.errors import InvalidOption
from runs.lab.fio.plan import FioSettings
from runs.models import AuditAction, BaselineRole, BaselineState, Device, DeviceBaseline

log = logging.getLogger(__name__)
SETTING_FIELDS = tuple(field.name for field in dataclass_fields(FioSettings))  # size_bytes, runtime_s, …


def baseline_settings_of(baseline: DeviceBaseline) -> FioSettings:
    """The lab layer's settings of a baseline, as it was asked."""
    return FioSettings(
        size_bytes=baseline.size_bytes,
        runtime_s=baseline.runtime_s,
        ramp_s=baseline.ramp_s,
        jobs=tuple(baseline.jobs),
        ioengine=baseline.ioengine,
    )


def fio_settings_errors(settings: FioSettings) -> dict[str, str]:
    """The lab layer's refusal of each setting, by field: every mistake at once, not the first."""
    errors = {}
    for name in SETTING_FIELDS:
        try:
            FioSettings(**{name: getattr(settings, name)}).validate()  # this one, the others as default
        except InvalidOption as exc:
            errors[name] = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
    return errors


def baseline_device_refusal(device: Device) -> str | None:
    """Why fio may not measure this device (or not now), or None."""
    host = device.host
    if not host.enabled:
        return f"{host.name} is disabled in the inventory: it takes no new jobs (an admin enables it)."
    if refusal := host.own_server_refusal():
        return refusal
    if device.is_block_device and not device.wipe_allowed:
        return (
            f"{device} is a block device that the inventory does not allow benchlab to wipe: fio would write "
            "it raw, which benchlab refuses on a protected device. An admin can allow wiping it "
            "(Admin → Devices → allow wipe) if nothing on it is needed; otherwise measure a directory device "
            "on its filesystem (fio then writes a file there)."
        )
    return None


def baseline_size_refusal(device: Device, settings: FioSettings) -> str | None:
    if device.capacity_bytes and settings.size_bytes > device.capacity_bytes:
        return (
            f"{settings.size_bytes // 2**20} MiB is more than {device}'s capacity "
            f"({device.capacity_bytes // 2**20} MiB in the inventory)."
        )
    return None


def baseline_queue(
    *,
    device: Device,
    settings: FioSettings,
    by: Any,
    request: HttpRequest | None = None,
    campaign: Any = None,
    role: BaselineRole = BaselineRole.BASELINE,
) -> DeviceBaseline:
    """Queue fio on `device` for `by`. Bad settings or a device fio may not measure raise
    ValidationError, field by field ("device" for the device), and nothing is created."""
    errors = fio_settings_errors(settings)
    if refusal := baseline_device_refusal(device):
        errors["device"] = refusal
    elif "size_bytes" not in errors and (too_big := baseline_size_refusal(device, settings)):
        errors["size_bytes"] = too_big
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        baseline = DeviceBaseline.objects.create(
            device=device,
            host_id=device.host_id,
            campaign=campaign,
            role=role,
            queued_by=by,
            size_bytes=settings.size_bytes,
            runtime_s=settings.runtime_s,
            ramp_s=settings.ramp_s,
            jobs=[job.name for job in settings.job_list()],
            ioengine=settings.ioengine,
        )
        audit_record(
            action=AuditAction.INVENTORY_ADDED,
            target=baseline,
            actor=by,
            request=request,
            message=f"fio {role.label} queued on {device}: {baseline.summary}",
        )
        queue_on_commit(baseline, BaselineState.QUEUED)
    return baseline
