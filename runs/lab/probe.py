"""What a lab host is: hardware, OS, disks, filesystems it can make, PostgreSQL installs, tools.

Every command here is fixed text (no user input); the answers go into the inventory as the
host's discovered facts.
"""

import json
import re
from dataclasses import asdict, dataclass, field

from runs.lab.transport import Transport, as_user

MKFS_PROGRAMS = ("mkfs.ext4", "mkfs.xfs", "mkfs.btrfs")
TOOLS = ("iostat", "vmstat", "fio", "pgbench")
# Where PostgreSQL installs live on Debian/Ubuntu and where custom builds usually go.
PG_BIN_GLOBS = "/usr/lib/postgresql/*/bin /usr/local/pgsql*/bin /opt/*/bin /opt/*/*/bin /usr/local/*/bin"


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


def _out(transport: Transport, argv: list[str]) -> str:
    return transport.run(argv, check=False).stdout.strip()


def _cpu(transport: Transport, facts: HostFacts) -> None:
    cpuinfo = _out(transport, ["cat", "/proc/cpuinfo"])
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    facts.cpu_model = model.group(1).strip() if model else ""
    cores = _out(transport, ["nproc", "--all"])
    facts.cpu_cores = int(cores) if cores.isdigit() else None
    meminfo = re.search(r"^MemTotal:\s*(\d+) kB", _out(transport, ["cat", "/proc/meminfo"]), re.MULTILINE)
    facts.memory_bytes = int(meminfo.group(1)) * 1024 if meminfo else None


def _os(transport: Transport, facts: HostFacts) -> None:
    facts.hostname = _out(transport, ["hostname"])
    facts.kernel = _out(transport, ["uname", "-r"])
    release = _out(transport, ["cat", "/etc/os-release"])
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]+)"?$', release, re.MULTILINE)
    facts.distribution = pretty.group(1) if pretty else ""


def _disks(transport: Transport, facts: HostFacts) -> None:
    columns = "NAME,PATH,SIZE,ROTA,MODEL,SERIAL,TYPE,MOUNTPOINTS,FSTYPE"
    listing = _out(transport, ["lsblk", "-J", "-b", "-o", columns])
    devices = json.loads(listing)["blockdevices"] if listing else []
    for device in devices:
        name = device["name"]
        holders = _out(transport, ["ls", f"/sys/class/block/{name}/holders"]).split()
        device["holders"] = holders
    facts.block_devices = devices
    links = _out(transport, ["find", "/dev/disk/by-id", "-maxdepth", "1", "-type", "l"]).split()
    for link in links:
        facts.by_id[link] = _out(transport, ["readlink", "-f", link])


def _pg_installs(transport: Transport, facts: HostFacts) -> None:
    # A fixed glob, expanded by the host's shell: no user text in it.
    found = _out(transport, ["sh", "-c", f"for d in {PG_BIN_GLOBS}; do [ -x $d/postgres ] && echo $d; done"])
    for bin_dir in found.split():
        version = re.search(r"(\d+(?:\.\d+)*)", _out(transport, [f"{bin_dir}/postgres", "--version"]))
        sizes = _compiled_block_sizes(transport, bin_dir)
        if version and sizes:
            facts.pg_installs.append(PgInstallFacts(bin_dir, version.group(1), *sizes))


def _compiled_block_sizes(transport: Transport, bin_dir: str) -> tuple[int, int] | None:
    """block_size and wal_block_size are compiled in; `postgres -C` reads them without a cluster."""
    scratch = _out(transport, as_user("postgres", ["mktemp", "-d"]))
    if not scratch:
        return None
    try:
        transport.run(as_user("postgres", ["mkdir", "-m", "0700", f"{scratch}/data"]), cwd="/")
        transport.run(as_user("postgres", ["touch", f"{scratch}/postgresql.conf"]), cwd="/")
        sizes = []
        for name in ("block_size", "wal_block_size"):
            argv = [f"{bin_dir}/postgres", "-D", f"{scratch}/data", f"--config-file={scratch}/postgresql.conf", "-C"]
            value = transport.run(as_user("postgres", [*argv, name]), cwd="/", check=False).stdout.strip()
            if not value.isdigit():
                return None
            sizes.append(int(value))
        return sizes[0], sizes[1]
    finally:
        transport.run(["rm", "-rf", "--", scratch], check=False)


def _tools(transport: Transport, facts: HostFacts) -> None:
    for name in (*MKFS_PROGRAMS, *TOOLS):
        present = transport.run(["sh", "-c", 'command -v "$1"', "sh", name], check=False).exit_status == 0
        if name in MKFS_PROGRAMS:
            if present:
                facts.mkfs_programs.append(name.removeprefix("mkfs."))
        else:
            facts.tools[name] = present
    if facts.tools.get("pgbench"):
        facts.pgbench_version = _out(transport, ["pgbench", "--version"])
    elif facts.pg_installs:
        facts.pgbench_version = _out(transport, [f"{facts.pg_installs[-1].bin_dir}/pgbench", "--version"])


def probe_host(transport: Transport) -> HostFacts:
    facts = HostFacts()
    _os(transport, facts)
    _cpu(transport, facts)
    _disks(transport, facts)
    _pg_installs(transport, facts)
    _tools(transport, facts)
    return facts
