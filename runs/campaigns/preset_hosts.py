"""Which host(s) a preset's study runs on: the user's choice, checked, or a default said as such.

A host that cannot take runs (disabled, benchlab's own server without an admin's leave, or not
serving PostgreSQL) is refused with its reason and the hosts that can.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runs.models import Device, Host


class PresetRefused(Exception):
    """The preset cannot be filled for the hosts asked: str() says why and which hosts can."""


@dataclass(frozen=True)
class HostChoice:
    """The chosen hosts (the first serves the base configuration) and how they came to be chosen."""

    hosts: list[Host]
    why: str  # "chosen" or the reason of the default

    @property
    def server(self) -> Host:
        return self.hosts[0]

    @property
    def sentence(self) -> str:
        """ "Host: lab1 (chosen)." or "Host: lab1 (by default: …; choose another above)." """
        names = ", ".join(host.name for host in self.hosts)
        label = "Hosts" if len(self.hosts) > 1 else "Host"
        if self.why == "chosen":
            return f"{label}: {names} (chosen)."
        return f"{label}: {names} (by default: {self.why}; choose another on the form)."


def runnable_hosts() -> list[Host]:
    """The hosts a preset may run on: enabled, serving PostgreSQL, not refused for runs."""
    return host_options()[0]


def host_refusal(host: Host) -> str | None:
    """Why a preset cannot run on this host, or None."""
    if not host.serves_postgres:
        return f"{host.name} does not serve PostgreSQL (the inventory says so): it can only run pgbench clients."
    return host.refusal_for_runs()


def _hosts_that_can() -> str:
    names = [host.name for host in runnable_hosts()]
    if not names:
        return "No host can: enable one that serves PostgreSQL in the inventory."
    return f"Hosts that can: {', '.join(names)}."


def host_choice(
    host_ids: Sequence[int] | None,
    *,
    several: bool,
    default: Callable[[list[Host]], tuple[Host, str]],
) -> HostChoice | None:
    """The hosts asked for (ids, in order), checked; without any, the default picks one among the
    runnable hosts (None if there is none). PresetRefused for an unknown or unrunnable host, or
    for several when the preset runs on one."""
    if not host_ids:
        hosts = runnable_hosts()
        if not hosts:
            return None
        host, why = default(hosts)
        return HostChoice([host], why)
    ids = list(dict.fromkeys(host_ids))
    if len(ids) > 1 and not several:
        raise PresetRefused(f"This preset runs on one host; {len(ids)} were chosen. {_hosts_that_can()}")
    found = Host.objects.in_bulk(ids)
    if missing := [str(pk) for pk in ids if pk not in found]:
        raise PresetRefused(f"No host has id {', '.join(missing)}. {_hosts_that_can()}")
    for host in found.values():
        if refusal := host_refusal(host):
            raise PresetRefused(f"The preset cannot run on {host.name}: {refusal} {_hosts_that_can()}")
    return HostChoice([found[pk] for pk in ids], "chosen")


def host_options() -> tuple[list[Host], list[tuple[Host, str]]]:
    """Every host, as those a preset may run on and those it may not with the reason (the form's chooser)."""
    runnable: list[Host] = []
    refused: list[tuple[Host, str]] = []
    for host in Host.objects.order_by("name"):
        refusal = host_refusal(host)
        if refusal is None:
            runnable.append(host)
        else:
            refused.append((host, refusal))
    return runnable, refused


def swept_hosts(device_ids: Sequence[str]) -> list[int]:
    """The ids of the hosts these devices are on, in host-name order (the chooser after a preview)."""
    devices = Device.objects.filter(pk__in=device_ids).order_by("host__name")
    return list(dict.fromkeys(devices.values_list("host_id", flat=True)))
