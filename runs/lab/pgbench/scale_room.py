"""How much room `pgbench -i` needs for a scale, and how much room a run's tmpfs has.

The queue form, the API and campaign expansion refuse a scale that cannot fit on the run's
storage (runs/bench/specs.py) before any lab host is touched. Pure: no Django, no I/O.

The figures were measured on the development machine (PostgreSQL 15.19, default settings, a
throw-away cluster, `pgbench -i -q -s 10` then `-s 50`):

- tables and indexes (pg_total_relation_size of the pgbench tables): 156,966,912 bytes at scale
  10 and 784,179,200 at scale 50, so 15,680,307 bytes (14.95 MiB) per unit of scale;
- pg_wal grew as much as the data it loaded (151 MB, then 789 MB): COPY and the index builds are
  WAL-logged with wal_level = replica, and checkpoints recycle it only past max_wal_size (1 GB);
- an empty cluster (initdb, one 16 MiB WAL segment): 40,155,493 bytes;
- the whole data directory after the scale 50 load: 1,596,271,891 bytes, this model's estimate
  being 1,610,612,736.

A new filesystem leaves less than the device's size to PostgreSQL (not root: ext4's 5 % reserve is
out of its reach), measured with df after mkfs with benchlab's options, as a share of the device:
ext4 0.892, xfs 0.868, btrfs 0.878 on 768 MiB; 0.892, 0.946, 0.892 on 2 GiB; 0.929, 0.992, 0.980
on 100 GiB. The smallest share stands for all: a refusal near the limit beats a full disk.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from runs.lab.postgres.settings import ALLOWED

MIB = 2**20
BYTES_PER_SCALE = 15 * MIB  # tables and indexes per unit of scale (14.95 MiB measured)
CLUSTER_BYTES = 40 * MIB  # an empty cluster, its first WAL segment included
DEFAULT_MAX_WAL_BYTES = 1024 * MIB  # PostgreSQL's default max_wal_size
MAX_SCALE = 100_000
FORMATTED_SHARE = 0.868  # of a device, free to PostgreSQL after mkfs (the smallest measured, above)


@dataclass(frozen=True)
class ScaleNeed:
    """The room a load of `scale` takes at its peak, and of what."""

    scale: int
    data_bytes: int  # tables and indexes
    wal_bytes: int  # WAL written while loading, kept until a checkpoint recycles it
    cluster_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.data_bytes + self.wal_bytes + self.cluster_bytes


def scale_need(scale: int, max_wal_bytes: int = DEFAULT_MAX_WAL_BYTES) -> ScaleNeed:
    """The room `pgbench -i -s scale` needs: its data, the WAL written while loading (as much as
    the data, until max_wal_size makes checkpoints recycle it) and the empty cluster."""
    data = scale * BYTES_PER_SCALE
    return ScaleNeed(scale, data, min(data, max_wal_bytes), CLUSTER_BYTES)


def largest_fitting_scale(room_bytes: int, max_wal_bytes: int = DEFAULT_MAX_WAL_BYTES) -> int:
    """The largest scale whose load fits in `room_bytes`; 0 if not even scale 1 does."""
    low, high = 0, MAX_SCALE
    while low < high:  # the need grows with the scale: bisect for the last one that fits
        middle = (low + high + 1) // 2
        if scale_need(middle, max_wal_bytes).total_bytes <= room_bytes:
            low = middle
        else:
            high = middle - 1
    return low


def max_wal_bytes(settings: Mapping[str, str]) -> int:
    """max_wal_size in bytes, from a run's checked settings (runs.lab.options.parse_settings), else
    PostgreSQL's default: the WAL a load keeps before checkpoints recycle it."""
    value = settings.get("max_wal_size")
    megabytes = ALLOWED["max_wal_size"].in_base_unit(value) if value else None
    return int(megabytes * MIB) if megabytes else DEFAULT_MAX_WAL_BYTES


_TMPFS_SUFFIXES = {"k": 2**10, "m": 2**20, "g": 2**30}


def tmpfs_room(mount_options: tuple[str, ...], memory_bytes: int | None) -> tuple[int, str] | None:
    """How much a tmpfs mounted with these options holds, and why: its size= option (bytes with
    k, m or g, or a percentage of RAM), else the kernel's default, half the RAM. None when that
    depends on a RAM size the inventory does not know."""
    size = next((option.partition("=")[2] for option in mount_options if option.startswith("size=")), None)
    if size and not size.endswith("%"):
        factor = _TMPFS_SUFFIXES.get(size[-1].lower(), 1)
        return int(size.rstrip("kKmMgG")) * factor, "its size= option"
    if memory_bytes is None:
        return None
    percent = int(size[:-1]) if size else 50
    why = f"{percent} % of the host's RAM" + ("" if size else ", tmpfs's default; size= sets it")
    return memory_bytes * percent // 100, why
