"""A campaign's fio canaries, read for its page and its API: per device, the canary before and
after the campaign compared (runs.method.canary) and the Method check over them. Two queries."""

from dataclasses import dataclass
from typing import Any

from runs.method.canary import DeviceCanary, canary_check, compare_canary
from runs.method.outcome import Check
from runs.models import BaselineRole, Campaign, DeviceBaseline, Run, RunState


@dataclass(frozen=True)
class CampaignCanaries:
    devices: list[DeviceCanary]
    check: Check


def campaign_canaries(campaign: Campaign) -> CampaignCanaries:
    canaries = campaign.baselines.filter(role__in=[BaselineRole.CANARY_BEFORE, BaselineRole.CANARY_AFTER])
    rows = list(canaries.select_related("device__host").defer("fio_json", "log", "failed_output").order_by("pk"))
    # The latest of each role per device (a canary queued again replaces the one before it).
    ends: dict[int, dict[str, DeviceBaseline]] = {}
    for row in rows:
        ends.setdefault(row.device_id, {})[row.role] = row
    devices = []
    for device_id, found in ends.items():
        device = next(iter(found.values())).device
        before, after = found.get(BaselineRole.CANARY_BEFORE), found.get(BaselineRole.CANARY_AFTER)
        devices.append(compare_canary(str(device), device_id, before, after))
    cancelled = Run.objects.filter(campaign=campaign, state=RunState.CANCELLED).exists()
    return CampaignCanaries(devices, canary_check(devices, asked=campaign.fio_canary, cancelled=cancelled))


def canaries_json(canaries: CampaignCanaries) -> dict[str, Any]:
    """The API's view: each device's canaries and figures, and the check."""
    return {
        "status": canaries.check.status.value,
        "reason": canaries.check.reason,
        "devices": [
            {
                "device": device.device,
                "device_id": device.device_id,
                "status": device.status,
                "why": device.why,
                "margin_factor": device.factor,  # after / before beyond it either way is a change
                "before": _end_json(device.before),
                "after": _end_json(device.after),
                "figures": [
                    {
                        "job": figure.job,
                        "direction": figure.direction,
                        "figure": figure.figure,
                        "unit": figure.unit,
                        "before": figure.before,
                        "after": figure.after,
                        "change_pct": figure.change_pct,
                        "changed": figure.changed,
                    }
                    for figure in device.figures
                ],
            }
            for device in canaries.devices
        ],
    }


def _end_json(end: DeviceBaseline | None) -> dict[str, Any] | None:
    if end is None:
        return None
    return {"id": end.pk, "state": end.state, "finished_at": end.finished_at.isoformat() if end.finished_at else None}
