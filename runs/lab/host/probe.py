"""What a lab host is: hardware, OS, disks, filesystems it can make, PostgreSQL installs, tools;
and how it is tuned and how busy it is (now.py), for the checklist before a campaign.

Every command here is fixed text (no user input); the answers go into the inventory as the
host's discovered facts.
"""

import json
import re
from dataclasses import asdict, dataclass, field

from runs.lab.host.now import host_now_around
from runs.lab.host.run_user import ensure_run_user, run_as_run_user
from runs.lab.parse.sections import split_sections
from runs.lab.pgbuild.options import BUILDS_ROOT
from runs.lab.storage.prepare import MKFS_COMMAND
from runs.lab.transport.interface import Transport

MKFS_PROGRAMS = tuple(command[0] for command in MKFS_COMMAND.values())
TOOLS = ("iostat", "vmstat", "fio", "pgbench", "sysbench")  # sysbench: its driver checks it again (drivers.py)
# Where PostgreSQL installs live on Debian/Ubuntu, where custom builds usually go, and benchlab's
# own builds (pg_build.py; their work dirs are dot names, which the glob skips).
PG_BIN_GLOBS = (
    f"/usr/lib/postgresql/*/bin /usr/local/pgsql*/bin /opt/*/bin /opt/*/*/bin /usr/local/*/bin {BUILDS_ROOT}/*/bin"
)


@dataclass(frozen=True)
class PgInstallFacts:
    bin_dir: str
    version: str
    block_size: int
    wal_block_size: int


@dataclass
class HostFacts:
    hostname: str = ""
    cpu_model: str = ""
    cpu_cores: int | None = None
    memory_bytes: int | None = None
    kernel: str = ""
    distribution: str = ""
    block_devices: list[dict[str, object]] = field(default_factory=list)
    by_id: dict[str, str] = field(default_factory=dict)  # /dev/disk/by-id/… -> /dev/…
    mkfs_programs: list[str] = field(default_factory=list)
    pg_installs: list[PgInstallFacts] = field(default_factory=list)
    pgbench_version: str = ""
    tools: dict[str, bool] = field(default_factory=dict)
    now: dict[str, object] | None = None  # tuning and activity as the probe found them (now.py)

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def _out_as_run_user(transport: Transport, argv: list[str]) -> str:
    return run_as_run_user(transport, argv, check=False).stdout.strip()


def _out(transport: Transport, argv: list[str]) -> str:
    return transport.run(argv, check=False).stdout.strip()


# Fixed shell snippets (no user text): each gathers what would otherwise take many round trips.
_SYSTEM = 'hostname; uname -r; nproc --all; echo "==cpuinfo"; cat /proc/cpuinfo; echo "==meminfo"; cat /proc/meminfo; echo "==os-release"; cat /etc/os-release'  # noqa: E501
_HOLDERS = 'for d in /sys/class/block/*/holders; do n=${d%/holders}; echo "${n##*/}:" $(ls "$d"); done'
_BY_ID = 'for l in /dev/disk/by-id/*; do [ -L "$l" ] && echo "$l $(readlink -f "$l")"; done; true'
_TOOLS = 'for t in "$@"; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done; true'
# Only installs nobody but root can change (the program, its directory and every directory
# above, sticky ones like /tmp aside): an admin still decides which become inventory.
TRUSTED_PATH = (
    "trusted() { p=$1; while :; do "
    '[ -n "$(find "$p" -maxdepth 0 -user 0 \\( ! -perm /022 -o -perm -1000 \\))" ] || return 1; '
    '[ "$p" = / ] && return 0; p=$(dirname "$p"); done; }'
)
_PG_DIRS = (
    f"{TRUSTED_PATH}; "
    f'for d in {PG_BIN_GLOBS}; do [ -x "$d/postgres" ] && trusted "$d/postgres" && echo "$d"; done; true'
)
# block_size and wal_block_size are compiled in; `postgres -C` reads them without a cluster.
_PG_SIZES = (
    'set -e; s=$(mktemp -d); trap \'rm -rf "$s"\' EXIT; mkdir -m 0700 "$s/data"; touch "$s/postgresql.conf"; '
    'for p in block_size wal_block_size; do "$1/postgres" -D "$s/data" --config-file="$s/postgresql.conf" -C $p; done'
)


def _system(transport: Transport, facts: HostFacts) -> None:
    sections = split_sections(_out(transport, ["sh", "-c", _SYSTEM]))
    head = sections["head"].split()
    facts.hostname, facts.kernel = [*head, "", ""][:2]
    facts.cpu_cores = int(head[2]) if len(head) > 2 and head[2].isdigit() else None
    model = re.search(r"^model name\s*:\s*(.+)$", sections.get("cpuinfo", ""), re.MULTILINE)
    facts.cpu_model = model.group(1).strip() if model else ""
    memory = re.search(r"^MemTotal:\s*(\d+) kB", sections.get("meminfo", ""), re.MULTILINE)
    facts.memory_bytes = int(memory.group(1)) * 1024 if memory else None
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]+)"?$', sections.get("os-release", ""), re.MULTILINE)
    facts.distribution = pretty.group(1) if pretty else ""


def _disks(transport: Transport, facts: HostFacts) -> None:
    columns = "NAME,PATH,SIZE,ROTA,MODEL,SERIAL,TYPE,MOUNTPOINTS,FSTYPE"
    listing = _out(transport, ["lsblk", "-J", "-b", "-o", columns])
    devices = json.loads(listing)["blockdevices"] if listing else []
    holders = {}
    for line in _out(transport, ["sh", "-c", _HOLDERS]).splitlines():
        name, _, held_by = line.partition(":")
        holders[name] = held_by.split()
    for device in devices:
        device["holders"] = holders.get(device["name"], [])
    facts.block_devices = devices
    for line in _out(transport, ["sh", "-c", _BY_ID]).splitlines():
        link, _, node = line.partition(" ")
        facts.by_id[link] = node


def _pg_installs(transport: Transport, facts: HostFacts) -> None:
    # Programs found on the host are run as benchlab's unprivileged user, never as root.
    for bin_dir in _out(transport, ["sh", "-c", _PG_DIRS]).split():
        version = re.search(r"(\d+(?:\.\d+)*)", _out_as_run_user(transport, [f"{bin_dir}/postgres", "--version"]))
        sizes = _out_as_run_user(transport, ["sh", "-c", _PG_SIZES, "sh", bin_dir]).split()
        if version and len(sizes) == 2 and all(size.isdigit() for size in sizes):
            facts.pg_installs.append(PgInstallFacts(bin_dir, version.group(1), int(sizes[0]), int(sizes[1])))


def _tools(transport: Transport, facts: HostFacts) -> None:
    present = set(_out(transport, ["sh", "-c", _TOOLS, "sh", *MKFS_PROGRAMS, *TOOLS]).split())
    facts.mkfs_programs = [name.removeprefix("mkfs.") for name in MKFS_PROGRAMS if name in present]
    facts.tools = {name: name in present for name in TOOLS}
    if facts.tools["pgbench"]:
        facts.pgbench_version = _out_as_run_user(transport, ["pgbench", "--version"])
    elif facts.pg_installs:
        facts.pgbench_version = _out_as_run_user(transport, [f"{facts.pg_installs[-1].bin_dir}/pgbench", "--version"])


def probe_host(transport: Transport) -> HostFacts:
    """What the host is. Creates benchlab's unprivileged user there if it is missing: the
    programs the probe finds run only as that user."""
    ensure_run_user(transport)
    facts = HostFacts()

    def what_it_is() -> None:
        _system(transport, facts)
        _disks(transport, facts)
        _pg_installs(transport, facts)
        _tools(transport, facts)

    # The other reads are its activity's window, with no wait added: a few tenths of a second on the
    # virtual lab (30 clock ticks or so, enough to tell a process taking a fifth of a CPU), more on
    # a host with many disks and installs. "Check the hosts now" takes a full WINDOW_S.
    now, _ = host_now_around(transport, what_it_is, window_s=0)
    facts.now = now.as_json()
    return facts


@dataclass
class DeviceFacts:
    """What a block device says it is, from lsblk and sysfs on its host: what drift is checked
    against. A loop device (the virtual lab's disks) has no model, serial or firmware: those stay
    empty and its backing file says what it is."""

    node: str = ""  # the resolved node, e.g. /dev/sda1
    disk: str = ""  # the whole disk it is on, e.g. /dev/sda (the node itself for a whole disk)
    size_bytes: int | None = None  # of the node
    model: str = ""
    vendor: str = ""
    serial: str = ""
    firmware: str = ""
    wwn: str = ""
    transport: str = ""  # sata, nvme, usb…
    rotational: bool | None = None
    backing_file: str = ""  # a loop device's image

    def as_json(self) -> dict[str, object]:
        return asdict(self)


_LSBLK_COLUMNS = "NAME,PATH,PKNAME,TYPE,SIZE,ROTA,MODEL,VENDOR,SERIAL,REV,WWN,TRAN"
# $1 is the device's path from the inventory, passed as an argument (never pasted into the
# script). A partition's model and firmware are its disk's; NVMe keeps its firmware in
# device/firmware_rev, SCSI and ATA in device/rev.
_DEVICE = (
    'n=$(readlink -f -- "$1") || exit 0; [ -b "$n" ] || exit 0; '
    'p=$(lsblk -ndo PKNAME -- "$n" 2>/dev/null | head -n 1); d=${p:+/dev/$p}; d=${d:-$n}; b=${d##*/}; '
    'echo "$n"; echo "$d"; echo "==lsblk"; '
    f'lsblk -J -b -d -o {_LSBLK_COLUMNS} -- "$n" "$d" 2>/dev/null; '
    'echo "==firmware_rev"; cat "/sys/block/$b/device/firmware_rev" 2>/dev/null; '
    'echo "==rev"; cat "/sys/block/$b/device/rev" 2>/dev/null; '
    'echo "==backing_file"; cat "/sys/block/$b/loop/backing_file" 2>/dev/null; true'
)


def _text(value: object) -> str:
    return str(value).strip() if value is not None else ""


def device_facts_from(output: str) -> DeviceFacts:
    """DeviceFacts from the output of _DEVICE (pure: tested on captured text). Empty when the
    path is not a block device (a directory-backed device, or one that has gone away)."""
    sections = split_sections(output)
    head = sections["head"].split()
    if len(head) < 2:
        return DeviceFacts()
    facts = DeviceFacts(node=head[0], disk=head[1])
    try:
        listed = json.loads(sections.get("lsblk") or "{}").get("blockdevices", [])
    except json.JSONDecodeError:
        listed = []
    by_path = {entry.get("path"): entry for entry in listed if isinstance(entry, dict)}
    node, disk = by_path.get(facts.node, {}), by_path.get(facts.disk, {})
    size = node.get("size")
    facts.size_bytes = int(size) if isinstance(size, int | str) and str(size).isdigit() else None
    rotational = disk.get("rota", node.get("rota"))
    facts.rotational = rotational if isinstance(rotational, bool) else None
    facts.model, facts.vendor = _text(disk.get("model")), _text(disk.get("vendor"))
    facts.serial, facts.wwn = _text(disk.get("serial")), _text(disk.get("wwn"))
    facts.transport = _text(disk.get("tran"))
    facts.firmware = _text(sections.get("firmware_rev")) or _text(sections.get("rev")) or _text(disk.get("rev"))
    facts.backing_file = _text(sections.get("backing_file"))
    return facts


def probe_device(transport: Transport, path: str) -> DeviceFacts:
    """What the block device at `path` (a /dev/disk/by-id/… link or a node) is, in one round
    trip; empty facts for a path that is no block device."""
    return device_facts_from(transport.run(["sh", "-c", _DEVICE, "sh", path], check=False).stdout)


@dataclass(frozen=True)
class PgBuildFacts:
    version: str = ""  # pg_config --version: "PostgreSQL 15.19 (Debian 15.19-0+deb12u1)"
    configure: str = ""  # pg_config --configure: the options it was built with


def probe_pg_build(transport: Transport, bin_dir: str) -> PgBuildFacts:
    """How the install in `bin_dir` was built, from its own pg_config (run as benchlab's
    unprivileged user); empty when the install has none."""
    script = '[ -x "$1/pg_config" ] || exit 0; "$1/pg_config" --version; echo "==configure"; "$1/pg_config" --configure'
    sections = split_sections(_out_as_run_user(transport, ["sh", "-c", script, "sh", bin_dir]))
    return PgBuildFacts(version=sections["head"].strip(), configure=sections.get("configure", "").strip())
