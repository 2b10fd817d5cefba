"""Which memory a run's database fits in, and whether its settings and mounts make it durable.

The tier decides what a storage comparison can show: a database inside shared_buffers is read
from PostgreSQL's own memory, one inside the RAM from the page cache, and only one larger than
the RAM makes the device answer reads (Vondra's and Smith's studies size for exactly this). The
whole RAM is the line, as the seeds draw it: the page cache can hold less, never more.
"""

from runs.common.units import binary_size
from runs.method.facts import MethodFacts

FITS_SHARED_BUFFERS = "fits in shared buffers"
FITS_RAM = "fits in RAM"
EXCEEDS_RAM = "exceeds RAM"
TIERS = (FITS_SHARED_BUFFERS, FITS_RAM, EXCEEDS_RAM)

NO_BARRIER_OPTIONS = frozenset({"barrier=0", "nobarrier"})  # ext4's and btrfs's/xfs's: no cache flushes
DURABILITY_SETTINGS = ("fsync", "synchronous_commit", "full_page_writes")


def memory_tier(facts: MethodFacts) -> str:
    """The tier, or "" when the database's size or the host's RAM is not known."""
    if facts.database_bytes is None or facts.memory_bytes is None:
        return ""
    if facts.shared_buffers_bytes is not None and facts.database_bytes <= facts.shared_buffers_bytes:
        return FITS_SHARED_BUFFERS
    return FITS_RAM if facts.database_bytes <= facts.memory_bytes else EXCEEDS_RAM


def tier_figures(facts: MethodFacts) -> str:
    """ "database 150 MiB, shared_buffers 128 MiB, RAM 24 GiB" (what is known of it)."""
    parts = [
        f"{label} {binary_size(value)}"
        for label, value in (
            ("database", facts.database_bytes),
            ("shared_buffers", facts.shared_buffers_bytes),
            ("RAM", facts.memory_bytes),
        )
        if value is not None
    ]
    return ", ".join(parts)


def not_durable_because(facts: MethodFacts) -> list[str]:
    """Why a crash could lose or corrupt what this run committed; empty when nothing says so.

    A volatile write cache counts only when nothing flushes it: with barrier=0 / nobarrier the
    filesystem sends no flushes, so a "write back" cache (sysfs) holds commits the device has not
    stored. With flushes on, a write-back cache is how every SSD and disk works, and durable.
    """
    reasons = [f"{name} = {facts.settings[name]}" for name in DURABILITY_SETTINGS if facts.settings.get(name) == "off"]
    no_flush = [option for option in facts.mount_options if option in NO_BARRIER_OPTIONS]
    reasons += [f"mounted with {option}" for option in no_flush]
    if no_flush and facts.device.get("write_cache") == "write back":
        reasons.append("the device's write cache is volatile (write back) and nothing flushes it")
    if facts.unlogged_tables:
        reasons.append("the tables are unlogged (pgbench -i --unlogged-tables): a crash empties them")
    return reasons
