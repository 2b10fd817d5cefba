"""What the command prints: JSON for scripts (--json), aligned tables and plain lines for people."""

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO


def print_json(data: object, out: TextIO | None = None) -> None:
    print(json.dumps(data, indent=2, sort_keys=False), file=out or sys.stdout)


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def table(headings: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns aligned on the widest cell, numbers to the right; no trailing spaces."""
    cells = [[cell(value) for value in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headings)]
    numeric = [bool(rows) and all(_is_number(row[i]) or row[i] is None for row in rows) for i in range(len(headings))]

    def line(values: Sequence[str]) -> str:
        padded = [v.rjust(w) if right else v.ljust(w) for v, w, right in zip(values, widths, numeric, strict=True)]
        return "  ".join(padded).rstrip()

    return "\n".join([line(list(headings)), *(line(row) for row in cells)])


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def size(num_bytes: int | None) -> str | None:
    """1073741824 → "1.0 GiB" (the inventory's memory)."""
    if num_bytes is None:
        return None
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def duration(seconds: float | None) -> str:
    """95 → "1m35s"; 4000 → "1h06m"."""
    if seconds is None:
        return "?"
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def say(message: str) -> None:
    """A line for the person (stderr): stdout stays the result a script reads."""
    print(message, file=sys.stderr)


def dig(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data
