"""Reads for a host's page: the host with its devices and installs, its recent runs, and what
changed on it and its devices over its runs (runs.compare.selectors.drift)."""

from dataclasses import dataclass

from django.db.models import Prefetch, Q
from django.shortcuts import get_object_or_404

from runs.compare.drift import Change, History
from runs.compare.selectors.drift import device_drift, host_drift
from runs.models import Device, Host, PgInstall, Run, RunClient

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
