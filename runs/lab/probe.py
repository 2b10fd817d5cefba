"""What a lab host is: hardware, OS, disks, filesystems it can make, PostgreSQL installs, tools.

Every command here is fixed text (no user input); the answers go into the inventory as the
host's discovered facts.
"""

import json
import re
from dataclasses import asdict, dataclass, field

from runs.lab.pg_build_options import BUILDS_ROOT
from runs.lab.run_user import ensure_run_user, run_as_run_user
from runs.lab.transport import Transport

MKFS_PROGRAMS = ("mkfs.ext4", "mkfs.xfs", "mkfs.btrfs")
TOOLS = ("iostat", "vmstat", "fio", "pgbench")
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


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^==(\S+)$", text, flags=re.MULTILINE)
    return {"head": parts[0], **dict(zip(parts[1::2], parts[2::2], strict=True))}


def _system(transport: Transport, facts: HostFacts) -> None:
    sections = _sections(_out(transport, ["sh", "-c", _SYSTEM]))
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
    _system(transport, facts)
    _disks(transport, facts)
    _pg_installs(transport, facts)
    _tools(transport, facts)
    return facts
