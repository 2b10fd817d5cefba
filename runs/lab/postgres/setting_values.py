"""What PostgreSQL accepts as the value of one setting, checked before benchlab writes it.

A value PostgreSQL refuses stops the throw-away cluster from starting, minutes into a run on a lab
machine, with the reason buried in the server log. Checking it when the run is queued tells the operator
at once, and names the values that would do. The rules follow PostgreSQL's own parsing (guc.c, 12-17):

- booleans: on, off, true, false, yes, no, 1, 0, case-insensitive, and the prefixes PostgreSQL takes
  (t, tr, f, y, n, of; not "o", which could be on or off);
- integers and reals: a decimal number; for a setting with a unit, optionally followed by a unit of the
  same kind, spelled exactly as PostgreSQL spells it (memory B, kB, MB, GB, TB; time us, ms, s, min, h,
  d). A bare number counts the setting's base unit (pg_settings.unit). An integer setting rounds;
- enums: one of the setting's values, case-insensitive, including the spellings PostgreSQL accepts
  without listing them (true, yes, 1 for on, ...).

Stricter than PostgreSQL in one place: hexadecimal and octal integers (0x10, 010) are refused.
Pure: no Django, no I/O. The table of settings is in runs/lab/postgres/settings.py.
"""

import math
import re
import sys
from dataclasses import dataclass
from typing import Literal

from runs.lab.errors import InvalidOption

Kind = Literal["bool", "integer", "real", "enum"]

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
DBL_MAX = sys.float_info.max

MEMORY_UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}  # in bytes
TIME_UNITS = {"us": 1, "ms": 10**3, "s": 10**6, "min": 60 * 10**6, "h": 3600 * 10**6, "d": 86400 * 10**6}  # in µs
UNITS = {"memory": MEMORY_UNITS, "time": TIME_UNITS}
# PostgreSQL's base units (pg_settings.unit): kind, size in bytes or µs, how a message names them.
BASE_UNITS = {
    "B": ("memory", 1, "bytes"),
    "kB": ("memory", 1024, "kB"),
    "8kB": ("memory", 8192, "8kB pages"),
    "MB": ("memory", 1024**2, "MB"),
    "ms": ("time", 10**3, "milliseconds"),
    "s": ("time", 10**6, "seconds"),
    "min": ("time", 60 * 10**6, "minutes"),
}

BOOLEAN = "a boolean: on, off, true, false, yes, no, 1 or 0"
# The unlisted spellings PostgreSQL accepts for an enum that also means on/off (huge_pages, ...).
BOOL_ALIASES = ("true", "false", "yes", "no", "1", "0")

_BLANK = "[ \t]*"
_NUMBER = re.compile(
    rf"{_BLANK}([+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?){_BLANK}([A-Za-z]*){_BLANK}"
)


def is_boolean(value: str) -> bool:
    """PostgreSQL's parse_bool: a word or a prefix of one, any case; "o" alone is ambiguous."""
    word = value.lower() if value.isascii() else ""
    if word in ("1", "0", "on", "of", "off"):
        return True
    return bool(word) and any(full.startswith(word) for full in ("true", "false", "yes", "no"))


def _number_text(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(float(number))


@dataclass(frozen=True)
class Setting:
    """One setting a benchmark may change, and what PostgreSQL accepts for it."""

    name: str
    kind: Kind
    example: str  # a typical valid value: the messages show it, the tests try it
    unit: str = ""  # the base unit (pg_settings.unit); "" for a plain number
    min: float = 0
    max: float = 0
    values: tuple[str, ...] = ()  # an enum's values, in the order a message lists them
    aliases: tuple[str, ...] = ()  # more values PostgreSQL accepts for the enum without listing them
    since: int = 12  # the first major version that has it (12: every version benchlab supports)
    until: int | None = None  # the last major version that has it

    def __post_init__(self) -> None:
        if self.unit and (self.unit not in BASE_UNITS or self.kind not in ("integer", "real")):
            raise ValueError(f"{self.name}: no {self.kind} setting has the unit {self.unit!r}")
        if (self.kind == "enum") != bool(self.values):
            raise ValueError(f"{self.name}: an enum and only an enum lists values")

    @property
    def unit_kind(self) -> str:
        """ "memory", "time" or "" for a plain number (and for a bool or enum)."""
        return BASE_UNITS[self.unit][0] if self.unit else ""

    def describe(self) -> str:
        """What the value must be, as the end of "<name> must be ..."."""
        if self.kind == "bool":
            return BOOLEAN
        if self.kind == "enum":
            return "one of " + ", ".join(self.values)
        noun = {"memory": "a size", "time": "a duration"}.get(self.unit_kind)
        text = f"{noun or ('a whole number' if self.kind == 'integer' else 'a number')} such as {self.example}"
        bare = self.in_base_unit(self.example)
        if self.unit and bare is not None:
            text += f" or {_number_text(bare)} ({BASE_UNITS[self.unit][2]})"
        return text + (", or -1" if self.min == -1 else "")

    def in_base_unit(self, value: str) -> float | None:
        """A number's value in the setting's base unit, rounded for an integer setting; None if malformed."""
        match = _NUMBER.fullmatch(value) if value.isascii() else None
        if not match:
            return None
        number, unit = float(match.group(1)), match.group(2)
        if unit:
            factor = UNITS.get(self.unit_kind, {}).get(unit)
            if factor is None:
                return None
            number = number * factor / BASE_UNITS[self.unit][1]
        if self.kind == "integer" and math.isfinite(number):
            number = float(round(number))  # half to even, as PostgreSQL's rint()
        return number

    def amount(self, value: str) -> float | None:
        """A size in bytes or a duration in microseconds, from a value with its unit ("64MB",
        "5min"); None if malformed or the setting has no unit. A bare number counts the base unit,
        whose "8kB" pages are taken as 8192 bytes: give sizes of other page sizes with their unit."""
        count = self.in_base_unit(value) if self.unit else None
        return count * BASE_UNITS[self.unit][1] if count is not None else None

    def check(self, value: str) -> None:
        """Raise InvalidOption, saying which values are allowed, unless PostgreSQL would take `value`."""
        if self.kind == "bool":
            accepted = is_boolean(value)
        elif self.kind == "enum":
            words = {word.lower() for word in (*self.values, *self.aliases)}
            accepted = value.isascii() and value.lower() in words
        else:
            number = self.in_base_unit(value)
            accepted = number is not None
            if number is not None and not self.min <= number <= self.max:
                raise InvalidOption(f"{self.name} must be {self._range()} (got {value!r})")
        if not accepted:
            raise InvalidOption(f"{self.name} must be {self.describe()} (got {value!r}{self._unit_hint(value)})")

    def _unit_hint(self, value: str) -> str:
        match = _NUMBER.fullmatch(value) if value.isascii() else None
        spelled = match.group(2) if match else ""
        for unit in UNITS.get(self.unit_kind, {}) if spelled else ():
            if unit.lower() == spelled.lower():
                return f"; units are case-sensitive: {unit}"
        return ""

    def _range(self) -> str:
        unit = f" ({BASE_UNITS[self.unit][2]})" if self.unit else ""
        if self.max >= DBL_MAX:
            return f"at least {_number_text(self.min)}{unit}"
        return f"between {_number_text(self.min)} and {_number_text(self.max)}{unit}"


# Shorthands for the table in pg_settings.py; `since`/`until` are the major versions that have the setting.


def flag(name: str, *, since: int = 12, until: int | None = None) -> Setting:
    return Setting(name, "bool", "on", since=since, until=until)


def choice(
    name: str, values: tuple[str, ...], *, aliases: tuple[str, ...] = (), since: int = 12, until: int | None = None
) -> Setting:
    return Setting(name, "enum", values[0], values=values, aliases=aliases, since=since, until=until)


def count(name: str, low: int, high: int, example: str, *, since: int = 12, until: int | None = None) -> Setting:
    """A whole number without a unit."""
    return Setting(name, "integer", example, min=low, max=high, since=since, until=until)


def number(name: str, low: float, high: float, example: str, *, since: int = 12, until: int | None = None) -> Setting:
    """A real number without a unit."""
    return Setting(name, "real", example, min=low, max=high, since=since, until=until)


def size(
    name: str, unit: str, low: int, high: int, example: str, *, since: int = 12, until: int | None = None
) -> Setting:
    """An integer amount of memory or disk, counted in `unit` when given bare."""
    return Setting(name, "integer", example, unit=unit, min=low, max=high, since=since, until=until)


def duration(
    name: str,
    unit: str,
    low: float,
    high: float,
    example: str,
    *,
    kind: Kind = "integer",
    since: int = 12,
    until: int | None = None,
) -> Setting:
    """An amount of time, counted in `unit` when given bare; vacuum's delays are reals."""
    return Setting(name, kind, example, unit=unit, min=low, max=high, since=since, until=until)
