"""Pure parsers for sysstat and procps output (`iostat -dxyt`, `vmstat -nt`). No I/O, no Django.

Columns are found by header name, because sysstat versions name and order them differently;
each format is pinned by a real captured fixture under runs/tests/fixtures/sysstat/.
"""

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import UTC, datetime

# --- iostat -dxyt -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IostatSample:
    timestamp: datetime | None  # aware with S_TIME_FORMAT=ISO; naive for locale formats; None without -t
    device: str
    r_per_s: float
    w_per_s: float
    rkb_per_s: float
    wkb_per_s: float
    r_await_ms: float | None
    w_await_ms: float | None
    aqu_sz: float | None
    util_pct: float | None


_IOSTAT_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S%z", "%m/%d/%y %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %I:%M:%S %p")
# Column names differ across sysstat versions (aqu-sz was avgqu-sz before 12; -m gives MB/s).
_IOSTAT_COLUMNS = {
    "r_per_s": ("r/s",),
    "w_per_s": ("w/s",),
    "rkb_per_s": ("rkB/s", "rMB/s"),
    "wkb_per_s": ("wkB/s", "wMB/s"),
    "r_await_ms": ("r_await",),
    "w_await_ms": ("w_await",),
    "aqu_sz": ("aqu-sz", "avgqu-sz"),
    "util_pct": ("%util",),
}
_IOSTAT_REQUIRED = ("r_per_s", "w_per_s", "rkb_per_s", "wkb_per_s")


def _parse_time(text: str, formats: Iterable[str]) -> datetime | None:
    for fmt in formats:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


class IostatStream:
    """Feed `iostat -dxyt` output a line at a time; each device row comes back as a sample."""

    def __init__(self) -> None:
        self.timestamp: datetime | None = None
        self._columns: dict[str, int] | None = None
        self._width = 0
        self._megabytes = False

    def feed(self, line: str) -> list[IostatSample]:
        text = line.strip()
        words = text.split()
        if not words:
            self._columns = None  # a blank line ends a device table
            return []
        if words[0].rstrip(":") == "Device":
            self._start_table(words)
            return []
        if self._columns is None or len(words) != self._width:
            if (when := _parse_time(text, _IOSTAT_TIME_FORMATS)) is not None:
                self.timestamp = when
            return []
        try:
            numbers = [float(word.replace(",", ".")) for word in words[1:]]  # some locales print 0,00
        except ValueError:
            return []
        values = {name: numbers[index] for name, index in self._columns.items()}
        if self._megabytes:
            values["rkb_per_s"] *= 1024
            values["wkb_per_s"] *= 1024
        return [
            IostatSample(
                timestamp=self.timestamp,
                device=words[0],
                r_per_s=values["r_per_s"],
                w_per_s=values["w_per_s"],
                rkb_per_s=values["rkb_per_s"],
                wkb_per_s=values["wkb_per_s"],
                r_await_ms=values.get("r_await_ms"),
                w_await_ms=values.get("w_await_ms"),
                aqu_sz=values.get("aqu_sz"),
                util_pct=values.get("util_pct"),
            )
        ]

    def _start_table(self, header: list[str]) -> None:
        positions = {name: index - 1 for index, name in enumerate(header) if index}
        columns = {}
        for field_name, names in _IOSTAT_COLUMNS.items():
            for name in names:
                if name in positions:
                    columns[field_name] = positions[name]
                    break
        if all(name in columns for name in _IOSTAT_REQUIRED):
            self._columns, self._width = columns, len(header)
            self._megabytes = "rMB/s" in positions


def parse_iostat(text: str) -> list[IostatSample]:
    stream = IostatStream()
    return [sample for line in text.splitlines() for sample in stream.feed(line)]


# --- vmstat -nt ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class VmstatSample:
    """One `vmstat -nt` row. Memory in KiB, bi/bo in blocks/s, CPU columns in percent."""

    timestamp: datetime | None  # aware when vmstat labels the column UTC, naive local time otherwise
    r: int
    b: int
    swpd: int
    free: int
    buff: int
    cache: int
    si: int
    so: int
    bi: int
    bo: int
    in_: int
    cs: int
    us: int
    sy: int
    id: int
    wa: int
    st: int | None = None  # absent from very old procps
    gu: int | None = None  # guest time, procps-ng 4.0.5+


_VMSTAT_FIELDS = {f.name.rstrip("_") for f in fields(VmstatSample)} - {"timestamp"}
_VMSTAT_REQUIRED = _VMSTAT_FIELDS - {"st", "gu"}


class VmstatStream:
    """Feed `vmstat -nt` output a line at a time. The first row after the header averages since
    boot, not over the interval, so it is dropped unless skip_since_boot is False."""

    def __init__(self, skip_since_boot: bool = True) -> None:
        self._skip_next = skip_since_boot
        self._columns: list[str] | None = None
        self._utc = False

    def feed(self, line: str) -> list[VmstatSample]:
        words = line.split()
        if words[:2] == ["r", "b"]:
            # With -t the header ends in the time zone of the timestamp (UTC, CET, ...), upper case
            # unlike every column name; the timestamp itself is two words on each row.
            self._utc = words[-1] == "UTC"
            self._columns = words[:-1] if words[-1].isupper() else words
            return []
        columns = self._columns
        if columns is None or not _VMSTAT_REQUIRED <= set(columns):
            return []
        if len(words) < len(columns) or not all(w.isdigit() for w in words[: len(columns)]):
            return []
        if self._skip_next:
            self._skip_next = False
            return []
        values = {name: int(word) for name, word in zip(columns, words, strict=False) if name in _VMSTAT_FIELDS}
        stamp = _parse_time(" ".join(words[len(columns) :]), ("%Y-%m-%d %H:%M:%S",))
        if stamp is not None and self._utc:
            stamp = stamp.replace(tzinfo=UTC)
        return [VmstatSample(timestamp=stamp, in_=values.pop("in"), **values)]


def parse_vmstat(text: str, skip_since_boot: bool = True) -> list[VmstatSample]:
    stream = VmstatStream(skip_since_boot=skip_since_boot)
    return [sample for line in text.splitlines() for sample in stream.feed(line)]
