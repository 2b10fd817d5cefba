"""Presets: the seeds' studies (../shared/seeds) as filled-in campaign forms, sized to the lab's
inventory. A preset only fills the form; the user sees the matrix and the estimate and may
change anything before queueing. Each description says what was sized to what, and what is
missing for the full study.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from runs.lab.scale_room import BYTES_PER_SCALE, FORMATTED_SHARE, MIB, largest_fitting_scale, scale_need
from runs.models import Device, Filesystem, Host, PgInstall, QueryMode, Workload
from runs.models.run_clients import version_key
from runs.page_size_study import PageSizeChoice, page_size_choice


@dataclass(frozen=True)
class Preset:
    title: str
    seed: str
    build: Callable[[], dict[str, dict[str, Any]]]


def _server() -> Host | None:
    """The host a preset runs on: enabled, serving PostgreSQL, with the most wipeable devices."""
    hosts = [host for host in Host.objects.filter(enabled=True, serves_postgres=True) if not host.refusal_for_runs()]
    return max(hosts, key=lambda h: (h.devices.filter(wipe_allowed=True).count(), -h.pk), default=None)


def _install(host: Host, block_size: int = 8192, version: str | None = None) -> PgInstall | None:
    """The newest install of that page size (of that version, if given) still on the host."""
    installs = host.pg_installs.filter(block_size=block_size, removed_at__isnull=True)
    if version is not None:
        installs = installs.filter(version=version)
    newest = sorted(installs, key=lambda pg: version_key(pg.version))
    return newest[-1] if newest else None


def _formattable(host: Host | None = None) -> list[Device]:
    """Wipeable block devices (mkfs allowed), of one host or of every enabled host."""
    devices = Device.objects.filter(wipe_allowed=True, path__startswith="/dev/", host__enabled=True)
    if host is not None:
        devices = devices.filter(host=host)
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


def _scale_fitting(size_bytes: float) -> int:
    """The scale whose tables and indexes take about size_bytes (for sizing to RAM)."""
    return max(1, int(size_bytes // BYTES_PER_SCALE))


def _fits(scale: int, capacity_bytes: int) -> bool:
    """Whether `pgbench -i -s scale` fits on a device this large once formatted (runs/lab/scale_room.py,
    the same rule the queue form applies)."""
    return scale_need(scale).total_bytes <= capacity_bytes * FORMATTED_SHARE


def _fit(scale: int, device: Device | None) -> tuple[int, str]:
    """The seed's scale, or the largest that fits on the device (with room for WAL), and a note."""
    if device is None or not device.capacity_bytes:
        return scale, ""
    fitting = max(1, largest_fitting_scale(int(device.capacity_bytes * FORMATTED_SHARE)))
    if fitting >= scale:
        return scale, ""
    return fitting, f" Scale {scale} would not fit on {device.host.name}:{device.name}: scale {fitting} instead."


def _ssd_vs_hdd() -> dict[str, dict[str, Any]]:
    host = _server()
    if host is None:
        return _nothing("SSD vs HDD")
    devices = _formattable()
    install = _install(host)
    smallest = min((d.capacity_bytes for d in devices if d.capacity_bytes), default=None)
    memory = min((d.host.memory_bytes for d in devices if d.host.memory_bytes), default=None)
    notes = []
    scales = [10]
    if memory:
        scales = [_scale_fitting(memory / 4)]  # fits in RAM with room for the page cache
        beyond = _scale_fitting(memory * 2)
        if smallest and not _fits(beyond, smallest):
            notes.append(
                f"A scale that does not fit in RAM ({beyond}, about {beyond * BYTES_PER_SCALE // 2**30} GiB) "
                f"does not fit on the smallest device ({smallest // 2**20} MiB): only the fitting scale is swept."
            )
        else:
            scales.append(beyond)
    else:
        notes.append("No host has a probed RAM size: scale 10 assumed to fit in RAM (probe the hosts to size it).")
    if smallest:
        scales = [s for s in scales if _fits(s, smallest)] or [1]
    cores = max((d.host.cpu_cores or 2 for d in devices), default=2)
    clients = sorted({1, 4, 10, 2 * cores})
    description = (
        "Seed 000/003: each drive with pgbench -c 10 -T 500 at a scale that fits in RAM and one that does not, "
        f"averaged over 10 runs. Sized here: scales {', '.join(map(str, scales))} "
        f"({BYTES_PER_SCALE // MIB} MiB per scale unit), clients {', '.join(map(str, clients))}. " + " ".join(notes)
    )
    return {
        "campaign": {"name": "SSD vs HDD", "description": description, "repetitions": 3},
        "base": _base(host, _pick(devices, ["ssd", "nvme"]), install, duration_s=120, warmup_s=10, clients=10),
        "sweep": {
            "device": [d.pk for d in devices],
            "scale": ", ".join(map(str, scales)),
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


def _mount_options() -> dict[str, dict[str, Any]]:
    host = _server()
    if host is None:
        return _nothing("Filesystems and mount options")
    device = _pick(_formattable(host), ["hdd", "ssd", "nvme", "virtual"])
    scale, note = _fit(10, device)
    description = (
        "Seed 002: ext4 data=ordered|writeback × strictatime|relatime|noatime, barrier=0, and btrfs with its "
        "defaults; pgbench -i -s 10, -c 10 -T 60. ext4's options do not apply to btrfs: those combinations "
        "are listed as rejected, with the reason. (none) is each filesystem's defaults." + note
    )
    return {
        "campaign": {"name": "Filesystems and mount options", "description": description, "repetitions": 3},
        "base": _base(host, device, _install(host), scale=scale, clients=10, duration_s=60, warmup_s=5),
        "sweep": {"filesystem": [Filesystem.EXT4, Filesystem.BTRFS], "mount_options": "\n".join(EXT4_MOUNT_OPTIONS)},
    }


def page_size_initial(choice: PageSizeChoice) -> dict[str, dict[str, Any]]:
    """The preset's form for that choice: -N -M prepared, 4 clients, scale 100 (or what fits),
    10 repetitions, one install per page size of the chosen source."""
    study = choice.study
    if choice.host is None or study is None:
        return _nothing("Page size")
    host = choice.host
    description = (
        "Seed 001: pgbench -N -M prepared at scale 100 (fits in memory), 2, 4 and 8 kB pages, each a benchlab "
        "build of one source with the same configure flags (never the packaged PostgreSQL), avg ± stdev, min, "
        "median, max over 10 runs. "
    )
    if study.source is None:
        description += f"Choose the source to build from ({choice.problem or 'none chosen'})."
    elif study.missing:
        description += (
            f"{host.name} has no build of {study.source.label} with {study.missing_text} pages: the button "
            "below builds them, then queues this study as the form has it."
        )
    device = _pick(_formattable(host), ["ssd", "nvme", "virtual", "hdd"])
    scale, note = _fit(100, device)
    base = _base(
        host,
        device,
        study.installs[-1] if study.installs else None,
        workload=Workload.SIMPLE_UPDATE,
        query_mode=QueryMode.PREPARED,
        scale=scale,
        clients=4,
        duration_s=200,
        warmup_s=10,
    )
    return {
        "campaign": {"name": "Page size", "description": description + note, "repetitions": 10},
        "base": base,
        "sweep": {"pg_install": [pg.pk for pg in study.installs]} if len(study.installs) > 1 else {},
    }


def _page_size(host: Host | None = None, source_key: str | None = None) -> dict[str, dict[str, Any]]:
    return page_size_initial(page_size_choice(host, source_key))


def _read_only() -> dict[str, dict[str, Any]]:
    host = _server()
    if host is None:
        return _nothing("Read-only")
    devices = _formattable(host)
    smallest = min(devices, key=lambda d: d.capacity_bytes or 2**62, default=None)
    scale, note = _fit(100, smallest)
    description = (
        "Seed 004: read-only pgbench (-S) after a warm-up, 10 and 20 clients, with iostat %util, CPU and "
        "the cache hit ratio (all recorded for every run). The seed warmed up for 5 minutes and measured 5." + note
    )
    base = _base(
        host, _pick(devices, ["ssd", "nvme"]), _install(host), workload=Workload.SELECT_ONLY, scale=scale,
        clients=10, duration_s=300, warmup_s=300,
    )  # fmt: skip
    return {
        "campaign": {"name": "Read-only", "description": description, "repetitions": 3},
        "base": base,
        "sweep": {"device": [d.pk for d in devices], "clients": "10, 20"},
    }


def _nothing(title: str) -> dict[str, dict[str, Any]]:
    description = f"{title}: no enabled host serves PostgreSQL; add one in the inventory first."
    return {"campaign": {"name": title, "description": description}, "base": {}, "sweep": {}}


PRESETS: dict[str, Preset] = {
    "ssd-vs-hdd": Preset("SSD vs HDD", "seeds 000 and 003", _ssd_vs_hdd),
    "mount-options": Preset("Filesystems and mount options", "seed 002", _mount_options),
    "page-size": Preset("Page size", "seed 001", _page_size),
    "read-only": Preset("Read-only", "seed 004", _read_only),
}


def preset_initial(name: str) -> dict[str, dict[str, Any]]:
    """The campaign form's initial values for a preset: {"campaign": …, "base": …, "sweep": …}."""
    return PRESETS[name].build()
