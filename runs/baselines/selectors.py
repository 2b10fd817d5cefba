"""Reads for fio baselines: a device's history (table and chart), its claims beside the latest
measurement, and the latest baseline of each device for a comparison. One query each."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from runs.models import CLAIMS, FIGURES, BaselineRole, BaselineState, Device, DeviceBaseline, Run

CHART_FIGURES = ("seq_read_mb_s", "seq_write_mb_s", "rand_read_iops_qd1", "rand_read_iops_qd32",
                 "rand_write_iops_qd1", "rand_write_iops_qd32", "read_lat_p50_ms", "read_lat_p99_ms")  # fmt: skip
LABELS = {key: (label, unit) for key, _job, _direction, _figure, label, unit in FIGURES}


def device_baselines(device: Device) -> QuerySet[DeviceBaseline]:
    """The device's baselines, newest first (fio's JSON left in the database)."""
    baselines = DeviceBaseline.objects.filter(device=device).select_related("queued_by")
    return baselines.defer("fio_json", "log", "failed_output").order_by("-created_at", "-id")


def device_chart(device: Device) -> dict[str, Any]:
    """The main figures of the device's done baselines over time, oldest first, for Chart.js:
    {"points": [{"id", "at", "mode", figure: value, …}], "figures": [{"key", "label", "unit"}]}."""
    # A campaign's canaries are a few seconds of three jobs (role): history, not the device's figures.
    done = device_baselines(device).filter(state=BaselineState.DONE, role=BaselineRole.BASELINE)
    done = done.order_by("finished_at", "id")
    points = []
    for baseline in done:
        measured = baseline.figures
        point: dict[str, Any] = {
            "id": baseline.pk,
            "at": baseline.finished_at.isoformat() if baseline.finished_at else None,
        }
        point["mode"] = baseline.target_mode
        point |= {key: measured[key] for key in CHART_FIGURES}
        points.append(point)
    figures = [{"key": key, "label": LABELS[key][0], "unit": LABELS[key][1]} for key in CHART_FIGURES]
    return {"points": points, "figures": figures}


@dataclass(frozen=True)
class ClaimRow:
    label: str
    unit: str
    claimed: float | None
    measured: float | None

    @property
    def percent(self) -> float | None:
        """Measured as a % of claimed (for a latency, below 100 % is better than claimed)."""
        if self.claimed is None or self.measured is None or self.claimed == 0:
            return None
        return 100.0 * self.measured / self.claimed


def claims_vs_measured(device: Device, latest: DeviceBaseline | None) -> list[ClaimRow]:
    """Each vendor claim beside the figure the latest done baseline measured for it."""
    measured = latest.figures if latest is not None else {}
    rows = []
    for claim_field, figure in CLAIMS:
        label, unit = LABELS[figure]
        rows.append(ClaimRow(label, unit, getattr(device, claim_field), measured.get(figure)))
    return rows


def latest_done(device: Device) -> DeviceBaseline | None:
    return (
        DeviceBaseline.objects.filter(device=device, state=BaselineState.DONE, role=BaselineRole.BASELINE)
        .order_by("-finished_at", "-id")
        .first()
    )


def device_recent_runs(device: Device, limit: int = 20) -> QuerySet[Run]:
    return Run.objects.filter(device=device).select_related("server_host").order_by("-created_at", "-id")[:limit]


@dataclass(frozen=True)
class DeviceBaselineRow:
    """One row of a comparison's fio table: a device and its latest done baseline (or none)."""

    device: Device
    baseline: DeviceBaseline | None

    @property
    def figures(self) -> dict[str, float | None]:
        return self.baseline.figures if self.baseline is not None else {}


def baselines_for_devices(device_ids: Iterable[int]) -> list[DeviceBaselineRow]:
    """The latest done fio baseline of each device (in the order given, each device once), for
    the table beside pgbench results in a comparison. Two queries whatever the number of devices."""
    ids = list(dict.fromkeys(device_ids))
    devices = Device.objects.select_related("host").in_bulk(ids)
    latest: dict[int, DeviceBaseline] = {}
    done = DeviceBaseline.objects.filter(device_id__in=ids, state=BaselineState.DONE, role=BaselineRole.BASELINE)
    done = done.defer("fio_json", "log")
    for baseline in done.order_by("device_id", "-finished_at", "-id").distinct("device_id"):
        latest[baseline.device_id] = baseline
    return [DeviceBaselineRow(devices[pk], latest.get(pk)) for pk in ids if pk in devices]
