"""Presets: the seeds' studies (../shared/seeds) as filled-in campaign forms, on the host(s) the
user chooses (runs.campaigns.preset_hosts) and sized to their inventory: scales in the seeds' memory tiers,
scale ≥ clients (runs.campaigns.preset_sizing). A preset only fills the form; the user sees the matrix and
the estimate and may change anything before queueing. Each description says which host and why,
what was sized to what, and what is missing for the full study.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from runs.campaigns.page_size_study import PageSizeChoice, page_size_choice
from runs.campaigns.preset_hosts import HostChoice, host_choice
from runs.campaigns.preset_sizing import (
    FITS_SHARE,
    clients_within,
    memory_tiers,
    room_scale,
    scale_for_bytes,
    tier_label,
)
from runs.common.units import binary_size
from runs.lab.pgbench.scale_room import BYTES_PER_SCALE
from runs.models import Device, Filesystem, Host, PgInstall, QueryMode, Workload
from runs.models.run_clients import version_key


@dataclass(frozen=True)
class Preset:
    title: str
    seed: str
    build: Callable[..., dict[str, dict[str, Any]]]  # (HostChoice[, source_key])
    several_hosts: bool = False  # may sweep the devices of more than one host
    takes_source: bool = False  # builds from a source the user chooses (the page-size study)
    default_host: Callable[[list[Host]], tuple[Host, str]] = lambda hosts: _most_devices(hosts)


def _names(hosts: Sequence[Host]) -> str:
    return ", ".join(host.name for host in hosts)


def _most_devices(hosts: list[Host]) -> tuple[Host, str]:
    """The runnable host with the most wipeable devices, and why it was picked."""
    counts = {host.pk: host.devices.filter(wipe_allowed=True, path__startswith="/dev/").count() for host in hosts}
    host = max(hosts, key=lambda h: (counts[h.pk], -h.pk))
    return host, f"of the hosts that can run it ({_names(hosts)}), it has the most wipeable devices ({counts[host.pk]})"


def _install(host: Host, block_size: int = 8192, version: str | None = None) -> PgInstall | None:
    """The newest install of that page size (of that version, if given) still on the host."""
    installs = host.pg_installs.filter(block_size=block_size, removed_at__isnull=True)
    if version is not None:
        installs = installs.filter(version=version)
    newest = sorted(installs, key=lambda pg: version_key(pg.version))
    return newest[-1] if newest else None


def _formattable(hosts: Sequence[Host]) -> list[Device]:
    """The hosts' wipeable block devices (mkfs allowed)."""
    devices = Device.objects.filter(wipe_allowed=True, path__startswith="/dev/", host__in=hosts)
    return list(devices.select_related("host").order_by("host__name", "name"))


def _pick(devices: Sequence[Device], kinds: Sequence[str]) -> Device | None:
    for kind in kinds:
        for device in devices:
            if device.kind == kind:
                return device
    return devices[0] if devices else None


def _base(host: Host, device: Device | None, install: PgInstall | None, **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "server_host": host.pk,
        "device": device.pk if device else None,
        "pg_install": install.pk if install else None,
        "filesystem": Filesystem.EXT4,
        "workload": Workload.TPCB_LIKE,
        "query_mode": QueryMode.SIMPLE,
        "log_sampling_rate": 1.0,
        "threads": 2,
    }
    return base | changes


def _memories(hosts: Sequence[Host]) -> list[int]:
    return [host.memory_bytes for host in hosts if host.memory_bytes]


def _fit(scale: int, device: Device | None) -> tuple[int, str]:
    """The seed's scale, or the largest that fits on the device (with room for WAL), and a note."""
    if device is None or not device.capacity_bytes:
        return scale, ""
    fitting = max(1, room_scale(device.capacity_bytes))
    if fitting >= scale:
        return scale, ""
    return fitting, f" Scale {scale} would not fit on {device}: scale {fitting} instead."


def _sized(
    scale: int, clients: Sequence[int], workload: str, device: Device | None, *, in_ram: bool = False
) -> tuple[int, list[int], str]:
    """A one-tier preset's scale fitted to its device (and, for a seed that kept its database in
    memory, to the fits-in-RAM tier), its clients kept at most the scale for a TPC-B-like
    workload, and what either changed, said after the tier's label."""
    memories = _memories([device.host]) if device else []
    note, in_memory = "", scale_for_bytes(memories[0] * FITS_SHARE) if memories else scale
    if in_ram and in_memory < scale:
        note, scale = f" Scale {scale} would take more than a quarter of the RAM: scale {in_memory} instead.", in_memory
    scale, fit_note = _fit(scale, device)
    kept, dropped = clients_within(scale, clients, workload)
    return scale, kept, f" Scale: {tier_label(scale, memories)}.{note}{fit_note}" + (f" {dropped}" if dropped else "")


def _ssd_vs_hdd(choice: HostChoice) -> dict[str, dict[str, Any]]:
    devices = _formattable(choice.hosts)
    swept = [d for d in devices if d.kind != Device.Kind.RAM] or devices
    memories = _memories(choice.hosts)
    cores = max((host.cpu_cores or 2 for host in choice.hosts), default=2)
    wanted = sorted({1, 4, 10, 2 * cores})
    tiers = memory_tiers(memories, [(str(d), d.capacity_bytes) for d in swept if d.capacity_bytes], max(wanted))
    clients, dropped = clients_within(min(tiers.scales), wanted, Workload.TPCB_LIKE)
    left_out = ", ".join(str(d) for d in devices if d not in swept)
    description = (
        "Seeds 000/003: each drive with pgbench -c 10 -T 500 at scale 100 (fits in the seed's 8 GB of RAM) and "
        f"1000 (does not), averaged over 10 runs. {choice.sentence} "
        f"Devices: {', '.join(map(str, swept)) or 'none wipeable'}"
        + (f" (left out, backed by RAM: {left_out}; tick them for an upper bound)" if left_out else "")
        + f". Scales: {'; '.join(tier_label(s, memories) for s in tiers.scales)}. "
        f"Clients {', '.join(map(str, clients))}, at most the scale (TPC-B-like updates lock one of the "
        "scale's branch rows). " + " ".join([*tiers.notes, dropped])
    )
    server_devices = [d for d in swept if d.host_id == choice.server.pk] or swept
    device = _pick(server_devices, ["ssd", "nvme"])
    base = _base(choice.server, device, _install(choice.server), duration_s=120, warmup_s=10)
    return {
        "campaign": {"name": "SSD vs HDD", "description": description.strip(), "repetitions": 3},
        "base": base | {"scale": min(tiers.scales), "clients": 10 if 10 in clients else max(clients)},
        "matrix": {
            "device": [d.pk for d in swept],
            "scale": ", ".join(map(str, tiers.scales)),
            "clients": ", ".join(map(str, clients)),
        },
    }


EXT4_MOUNT_OPTIONS = [
    "data=ordered,strictatime",
    "data=ordered,relatime",
    "data=ordered,noatime",
    "data=writeback,strictatime",
    "data=writeback,relatime",
    "data=writeback,noatime",
    "data=writeback,noatime,barrier=0",
    "(none)",
]


def _mount_options(choice: HostChoice) -> dict[str, dict[str, Any]]:
    host = choice.server
    device = _pick(_formattable([host]), ["hdd", "ssd", "nvme", "virtual"])
    scale, clients, sizing = _sized(10, [10], Workload.TPCB_LIKE, device)
    description = (
        "Seed 002: ext4 data=ordered|writeback × strictatime|relatime|noatime, barrier=0, and btrfs with its "
        "defaults; pgbench -i -s 10, -c 10 -T 60. ext4's options do not apply to btrfs: those combinations "
        f"are listed as rejected, with the reason. (none) is each filesystem's defaults. {choice.sentence}" + sizing
    )
    return {
        "campaign": {"name": "Filesystems and mount options", "description": description, "repetitions": 3},
        "base": _base(host, device, _install(host), scale=scale, clients=clients[-1], duration_s=60, warmup_s=5),
        "matrix": {"filesystem": [Filesystem.EXT4, Filesystem.BTRFS], "mount_options": "\n".join(EXT4_MOUNT_OPTIONS)},
    }


def _page_sizes(host: Host) -> int:
    return len({pg.block_size for pg in host.pg_installs.all() if pg.removed_at is None})


def _most_page_sizes(hosts: list[Host]) -> tuple[Host, str]:
    """The runnable host with installs of the most page sizes, and why it was picked."""
    host = max(hosts, key=_page_sizes)
    return host, f"of the hosts that can run it ({_names(hosts)}), it has the most page sizes ({_page_sizes(host)})"


def page_size_initial(choice: HostChoice, study_choice: PageSizeChoice) -> dict[str, dict[str, Any]]:
    """The preset's form for that host and source: -N -M prepared, 4 clients, scale 100 (or what
    fits in a quarter of the RAM and on the device), 10 repetitions, one install per page size,
    each a build of the chosen source (runs.campaigns.page_size_study)."""
    study = study_choice.study
    if study is None:
        return _nothing("Page size")
    host = choice.server
    description = (
        "Seed 001: pgbench -N -M prepared at scale 100 (fits in memory), 2, 4 and 8 kB pages, each a benchlab "
        "build of one source with the same configure flags (never the packaged PostgreSQL), avg ± stdev, min, "
        f"median, max over 10 runs. {choice.sentence} "
    )
    if study.source is None:
        description += f"Choose the source to build from ({study_choice.problem or 'none chosen'})."
    elif study.missing:
        description += (
            f"{host.name} has no build of {study.source.label} with {study.missing_text} pages: the button "
            "below builds them, then queues this study as the form has it."
        )
    device = _pick(_formattable([host]), ["ssd", "nvme", "virtual", "hdd"])
    scale, clients, sizing = _sized(100, [4], Workload.SIMPLE_UPDATE, device, in_ram=True)
    base = _base(
        host,
        device,
        study.installs[-1] if study.installs else None,
        workload=Workload.SIMPLE_UPDATE,
        query_mode=QueryMode.PREPARED,
        scale=scale,
        clients=clients[-1],
        duration_s=200,
        warmup_s=10,
    )
    return {
        "campaign": {"name": "Page size", "description": description.strip() + sizing, "repetitions": 10},
        "base": base,
        "matrix": {"pg_install": [pg.pk for pg in study.installs]} if len(study.installs) > 1 else {},
    }


def _page_size(choice: HostChoice, source_key: str | None = None) -> dict[str, dict[str, Any]]:
    """Asks the chosen host which sources it has (runs.campaigns.page_size_study.page_size_choice)."""
    return page_size_initial(choice, page_size_choice(choice.server, source_key))


READ_ONLY_TITLE = "Read-only on SSD, warm-up then measurement"
READ_ONLY_WARMUP_CLIENTS = 10  # seed 004: warm-up at 10 clients, then the measurement at twice that
READ_ONLY_SECONDS = 300  # five minutes each
LONG_LOAD_BYTES = 256 * 2**30  # past this, `pgbench -i` of the does-not-fit tier takes hours


def _read_only(choice: HostChoice) -> dict[str, dict[str, Any]]:
    """Seed 004: select-only on the host's SSD, a 5-minute warm-up run at 10 clients, then the
    measured 5 minutes at 20 in the same cluster; a scale that fits in the host's RAM and one that
    does not (preset_sizing.memory_tiers), each said with its tier."""
    host = choice.server
    devices = _formattable([host])
    device = _pick(devices, ["ssd", "nvme"])
    warmup, measured = READ_ONLY_WARMUP_CLIENTS, 2 * READ_ONLY_WARMUP_CLIENTS
    memories = _memories([host])
    sized = [(str(device), device.capacity_bytes)] if device and device.capacity_bytes else []
    tiers = memory_tiers(memories, sized, measured)
    notes = list(tiers.notes)
    if device is not None and device.kind not in ("ssd", "nvme"):
        notes.append(f"{host.name} has no wipeable SSD: {device} ({device.get_kind_display()}) instead.")
    if len(tiers.scales) > 1 and tiers.scales[-1] * BYTES_PER_SCALE > LONG_LOAD_BYTES:
        notes.append(
            f"The does-not-fit tier is large for {binary_size(max(memories))} of RAM: loading "
            f"{binary_size(tiers.scales[-1] * BYTES_PER_SCALE)} takes hours a run (choose a host with less RAM to "
            "shorten it)."
        )
    description = (
        f"Seed 004: read-only pgbench (-S) on an SSD, a {READ_ONLY_SECONDS // 60}-minute warm-up run at {warmup} "
        f"clients, then the measured {READ_ONLY_SECONDS // 60} minutes at {measured} clients in the same cluster "
        "(the warm-up's seconds are shown on each run's page, not counted); the table shows the cache hit ratio, "
        f"CPU busy and iowait and the disk's iostat %util beside tps and latency. {choice.sentence} "
        f"Device: {device or 'none wipeable'}. "
        f"Scales: {'; '.join(tier_label(s, memories) for s in tiers.scales)}. " + " ".join(notes)
    )
    base = _base(
        host, device, _install(host), workload=Workload.SELECT_ONLY, scale=tiers.scales[0], clients=measured,
        duration_s=READ_ONLY_SECONDS, warmup_s=0, warmup_run_s=READ_ONLY_SECONDS, warmup_run_clients=warmup,
    )  # fmt: skip
    matrix = {"scale": ", ".join(map(str, tiers.scales))} if len(tiers.scales) > 1 else {}
    return {
        "campaign": {"name": READ_ONLY_TITLE, "description": description.strip(), "repetitions": 3},
        "base": base,
        "matrix": matrix,
    }


def _nothing(title: str) -> dict[str, dict[str, Any]]:
    description = f"{title}: no enabled host serves PostgreSQL; add one in the inventory first."
    return {"campaign": {"name": title, "description": description}, "base": {}, "matrix": {}}


PRESETS: dict[str, Preset] = {
    "ssd-vs-hdd": Preset("SSD vs HDD", "seeds 000 and 003", _ssd_vs_hdd, several_hosts=True),
    "mount-options": Preset("Filesystems and mount options", "seed 002", _mount_options),
    "page-size": Preset("Page size", "seed 001", _page_size, default_host=_most_page_sizes, takes_source=True),
    "read-only": Preset(READ_ONLY_TITLE, "seed 004", _read_only),
}


def preset_initial(name: str, hosts: Sequence[int] | None = None, source_key: str | None = None) -> dict[str, Any]:
    """The campaign form's initial values for a preset on these hosts (ids; none: the preset's
    default host) and, for the page-size study, from this source (HostSource.key; none: its
    default): {"campaign": …, "base": …, "matrix": …, "hosts": [the chosen ids]}.
    PresetRefused for a host it cannot run on (see runs.campaigns.preset_hosts)."""
    preset = PRESETS[name]
    choice = host_choice(hosts, several=preset.several_hosts, default=preset.default_host)
    if choice is None:
        return _nothing(preset.title) | {"hosts": []}
    built = preset.build(choice, source_key) if preset.takes_source else preset.build(choice)
    return built | {"hosts": [host.pk for host in choice.hosts]}
