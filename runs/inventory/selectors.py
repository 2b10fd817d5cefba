"""Reads for a host's page: the host with its devices and installs, its recent runs, and what
changed on it and its devices over its runs (runs.compare.selectors.drift)."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Prefetch, Q
from django.shortcuts import get_object_or_404
from django.utils import timezone

from runs.compare.drift import Change, History
from runs.compare.selectors.drift import device_drift, host_drift
from runs.models import Device, DeviceHealthReading, Host, PgInstall, Run, RunClient

RECENT_RUNS = 20


@dataclass(frozen=True)
class DeviceHistory:
    device: Device
    history: History


@dataclass(frozen=True)
class HostPage:
    host: Host
    devices: list[Device]
    installs: list[PgInstall]
    runs: list[Run]  # newest first, server or client
    history: History  # the host's own facts and its installs' builds
    device_histories: list[DeviceHistory]  # of its devices that changed or began recording

    @property
    def latest(self) -> list[tuple[str, Change]]:
        """The newest changes on the host or its devices (those first seen the day the newest one
        was), each with what it is on: "lab1", "device ssd"."""
        found = [(self.host.name, c) for c in self.history.changes]
        found += [(f"device {d.device.name}", c) for d in self.device_histories for c in d.history.changes]
        if not found:
            return []
        newest = max(change.after.at for _, change in found).date()
        return sorted(
            [(on, change) for on, change in found if change.after.at.date() == newest],
            key=lambda pair: (pair[1].after.at, pair[1].after.run_id),
        )

    @property
    def latest_splits_recent_runs(self) -> bool:
        """Whether the newest changes fall among the recent runs listed: comparing one from before
        them with one from after compares two different machines."""
        first = min((change.before.at for _, change in self.latest), default=None)
        return first is not None and any((run.started_at or run.created_at) <= first for run in self.runs)

    @property
    def changed_runs(self) -> dict[int, list[str]]:
        """Per run id, the facts that run was the first to see changed (on the host or its
        devices): the recent runs list marks them."""
        marks: dict[int, list[str]] = {}
        for change in self.history.changes:
            marks.setdefault(change.after.run_id, []).append(change.fact)
        for found in self.device_histories:
            for change in found.history.changes:
                marks.setdefault(change.after.run_id, []).append(f"{found.device.name} {change.fact}")
        return marks

    @property
    def run_rows(self) -> list[tuple[Run, list[str]]]:
        """The recent runs, each with the facts it was the first to see changed."""
        marks = self.changed_runs
        return [(run, marks.get(run.pk, [])) for run in self.runs]


def host_page(host_id: int) -> HostPage:
    """Everything the host page shows; Http404 for a host that does not exist."""
    installs = PgInstall.objects.filter(removed_at__isnull=True).order_by("version", "block_size", "bin_dir")
    host = get_object_or_404(
        Host.objects.prefetch_related("devices", Prefetch("pg_installs", queryset=installs, to_attr="active_installs")),
        pk=host_id,
    )
    runs = list(
        Run.objects.filter(Q(server_host=host) | Q(pk__in=RunClient.objects.filter(host=host).values("run_id")))
        .select_related("server_host", "device", "pg_install")
        .only(
            "id",
            "state",
            "created_at",
            "started_at",
            "finished_at",
            "steady_tps_mean",
            "tps",
            "filesystem",
            "clients",
            "server_host__name",
            "device__name",
            "pg_install__version",
            "pg_install__block_size",
            "pg_install__label",
        )
        .order_by("-created_at", "-id")[:RECENT_RUNS]
    )
    devices = list(host.devices.all())
    histories = [DeviceHistory(device, device_drift(device)) for device in devices]
    return HostPage(
        host=host,
        devices=devices,
        installs=list(host.active_installs),  # type: ignore[attr-defined]
        runs=runs,
        history=host_drift(host),
        device_histories=[found for found in histories if found.history.changes or found.history.not_recorded],
    )


# SMART/NVMe health over time (runs.models.DeviceHealthReading) -----------------------------------

HEALTH_POINTS = 500  # the chart's newest readings: years of nightly runs
TB = 10**12  # drives rate their endurance in decimal terabytes written (TBW), as smartctl prints them


def health_verdict(reading: DeviceHealthReading) -> str:
    """ "wear 12 % used, 0 media errors, 48.1 TB written, SMART passed", or why there is no data."""
    if reading.none_reason:
        return reading.none_reason
    ata = reading.protocol == "ATA"
    parts = []
    if reading.wear_pct_used is not None:
        parts.append(f"wear {reading.wear_pct_used:g} % used")
    if reading.media_errors is not None:
        parts.append(f"{reading.media_errors} {'reallocated sectors' if ata else 'media errors'}")
    if reading.bytes_written is not None:
        parts.append(f"{reading.bytes_written / TB:.1f} TB written")
    if reading.critical_warning:
        parts.append(f"critical warning 0x{reading.critical_warning:02x}")
    if reading.passed is not None:
        parts.append("SMART passed" if reading.passed else "SMART FAILED")
    return ", ".join(parts) or "smartctl answered without health figures"


@dataclass(frozen=True)
class DeviceHealth:
    latest: DeviceHealthReading | None
    chart: dict[str, Any]  # what static/js/device_detail.js draws

    @property
    def verdict(self) -> str:
        return health_verdict(self.latest) if self.latest else ""


def device_health(device: Device) -> DeviceHealth:
    """The device's newest health reading and its readings over time (one query)."""
    newest = list(
        DeviceHealthReading.objects.filter(device=device).defer("raw").order_by("-read_at", "-pk")[:HEALTH_POINTS]
    )
    figures = [r for r in reversed(newest) if not r.none_reason]
    points = [
        {
            "at": r.read_at.isoformat(),
            "wear_pct_used": r.wear_pct_used,
            "media_errors": r.media_errors,
            "tb_written": None if r.bytes_written is None else round(r.bytes_written / TB, 3),
        }
        for r in figures
    ]
    return DeviceHealth(newest[0] if newest else None, {"points": points})


# A reading not stored this long after it was asked is shown as failed (no worker took it, or the
# worker died in it) and may be asked again: the worker's connect and smartctl's own limit
# (runs.inventory.services.device_health), with room for a worker busy with something else first.
HEALTH_READ_BOUND = timedelta(minutes=3)


@dataclass(frozen=True)
class HealthAsk:
    """A "Read health now" not yet stored: since when, and whether it overran its bound."""

    asked_at: datetime
    overdue: bool

    def as_json(self) -> dict[str, Any]:
        return {"pending": not self.overdue, "asked_at": self.asked_at.isoformat(), "overdue": self.overdue}


def health_ask(device: Device) -> HealthAsk | None:
    """The device's reading under way, or None (read from the row the page already has)."""
    if device.health_asked_at is None:
        return None
    return HealthAsk(device.health_asked_at, timezone.now() - device.health_asked_at > HEALTH_READ_BOUND)
