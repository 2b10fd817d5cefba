"""Units a lab engineer reads at a glance: the pages' filters (templatetags.units), the forms, checks
and comparisons all format with these.

Sizes are binary (KiB, MiB, GiB: what the kernel, lsblk and PostgreSQL count in), never "GB" for
GiB; PostgreSQL settings are shown as PostgreSQL's SHOW prints them ("128MB", "5min"), not in the
base unit pg_settings stores ("16384" of 8 kB pages); every duration carries its unit.
"""

import math
from collections.abc import Mapping

from runs.lab.postgres.setting_values import BASE_UNITS, MEMORY_UNITS, TIME_UNITS
from runs.lab.postgres.settings import ALLOWED

DEFAULT_BLOCK_SIZE = 8192
# Counted in WAL blocks (XLOG_BLCKSZ), not in data blocks: the two differ on a build with another
# --with-wal-blocksize. PostgreSQL's GUC_UNIT_XBLOCKS settings.
WAL_BLOCK_SETTINGS = frozenset({"wal_buffers", "wal_writer_flush_after"})


def duration(seconds: float | None) -> str:
    """1234.5 → "20 min 35 s"; 7500 → "2 h 5 min"; None → a dash."""
    if seconds is None:
        return "–"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def signed_pct(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f} %"


def percent(fraction: float | None) -> str:
    """0.0123 → "1.2 %"."""
    return "–" if fraction is None else f"{fraction * 100:.1f} %"


_BINARY_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def _number(value: object) -> float | None:
    """A number from a model field or a run's JSON (where it may be a string); None if it is none."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def binary_size(size: object) -> str:
    """805306368 -> "768 MiB"; 25769803776 -> "24 GiB"; 1610612736 -> "1.5 GiB"; 1 -> "1 byte";
    None -> a dash. Three significant digits at most, so 1023.9 MiB reads "1 GiB", not "1024 MiB"."""
    number = _number(size)
    if number is None:
        return "–" if size in (None, "") else str(size)
    sign, value, unit = "-" if number < 0 else "", abs(number), 0
    while value >= 1024 and unit < len(_BINARY_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    if unit == 0:
        return f"{sign}{value:.0f} {'byte' if value == 1 else 'bytes'}"
    shown = f"{value:.0f}" if value >= 100 else f"{value:.3g}"
    if float(shown) >= 1024 and unit < len(_BINARY_UNITS) - 1:  # rounded up to the next unit
        shown, unit = "1", unit + 1
    return f"{sign}{shown} {_BINARY_UNITS[unit]}"


def page_size(size: object) -> str:
    """A PostgreSQL page or WAL block size in bytes as PostgreSQL itself writes it (SHOW
    block_size's unit, initdb's and the docs' "8 kB", 1024 bytes): 8192 -> "8 kB"; a size that
    is no whole number of kB as binary_size writes it; None -> a dash."""
    number = _number(size)
    if number is None or number <= 0 or number % 1024:
        return binary_size(size)
    return f"{int(number) // 1024} kB"


def _base_unit_size(name: str, unit: str, block_size: int, wal_block_size: int) -> int:
    """What one of the setting's base units is worth, in bytes or microseconds."""
    if unit == "8kB":  # a block: the install's page size, or its WAL page size
        return wal_block_size if name in WAL_BLOCK_SETTINGS else block_size
    return BASE_UNITS[unit][1]


def _largest_exact_unit(amount: float, units: Mapping[str, int]) -> str:
    """The amount in the largest unit that holds it a whole number of times, as PostgreSQL's
    SHOW writes it: 134217728 bytes -> "128MB", 300000000 µs -> "5min"."""
    for unit, size in sorted(units.items(), key=lambda item: -item[1]):
        count = amount / size
        if count >= 1 and math.isclose(count, round(count), rel_tol=1e-9):
            return f"{round(count)}{unit}"
    smallest, size = min(units.items(), key=lambda item: item[1])
    return f"{amount / size:g}{smallest}"


def pg_setting_text(
    name: str, value: object, block_size: int = DEFAULT_BLOCK_SIZE, wal_block_size: int = DEFAULT_BLOCK_SIZE
) -> str:
    """A setting as pg_settings.setting reported it (a count of the setting's base unit) as SHOW
    prints it: shared_buffers 16384 -> "128MB" (with 8 kB pages), checkpoint_timeout 300 -> "5min".
    0 and -1 (off, or "the default") stay bare, as SHOW leaves them; a setting benchlab knows no
    unit for, and any value that is not a number, is shown as it is."""
    text = str(value)
    setting = ALLOWED.get(name)
    number = _number(text) if setting and setting.unit else None
    if setting is None or number is None or number <= 0:
        return text
    units = MEMORY_UNITS if setting.unit_kind == "memory" else TIME_UNITS
    amount = number * _base_unit_size(name, setting.unit, block_size, wal_block_size)
    return _largest_exact_unit(amount, units)


def pg_settings_shown(postgresql: object) -> list[tuple[str, str]]:
    """A run's environment["postgresql"] -> its non-default settings as (name, value with its unit)."""
    if not isinstance(postgresql, Mapping):
        return []
    settings = postgresql.get("non_default_settings")
    if not isinstance(settings, Mapping):
        return []
    block_size = int(_number(postgresql.get("block_size")) or DEFAULT_BLOCK_SIZE)
    wal_block_size = int(_number(postgresql.get("wal_block_size")) or DEFAULT_BLOCK_SIZE)
    return [(name, pg_setting_text(name, value, block_size, wal_block_size)) for name, value in settings.items()]


# pg_stat_bgwriter's columns (PostgreSQL 12-16) and who wrote those buffers.
BUFFER_WRITERS = (
    ("buffers_checkpoint", "checkpointer"),
    ("buffers_clean", "background writer"),
    ("buffers_backend", "backends"),
)


def buffers_written(metrics: object, block_size: object = None) -> str:
    """A run's metrics -> the shared buffers written during it and by whom:
    "12,345 buffers (96.4 MiB): checkpointer 10,000 · background writer 2,000 · backends 345"."""
    if not isinstance(metrics, Mapping) or metrics.get("buffers_written") is None:
        return "–"
    total = int(metrics["buffers_written"])
    page = _number(block_size)
    size = f" ({binary_size(total * page)})" if page else ""
    stats = metrics.get("pg_stats") or {}
    parts = [f"{label} {int(stats[key]):,}" for key, label in BUFFER_WRITERS if _number(stats.get(key)) is not None]
    return f"{total:,} buffer{'' if total == 1 else 's'}{size}" + (f": {' · '.join(parts)}" if parts else "")


def metric_title(metric: object) -> str:
    """A metric's name with its unit, the unit said once: "latency, mean (ms)", but "tps (steady
    state)", whose name says it already (static/js/compare.js titles the charts the same way)."""
    label, unit = str(getattr(metric, "label", "")), str(getattr(metric, "unit", ""))
    return label if not unit or unit in label else f"{label} ({unit})"
