"""A device's health from `smartctl --json=c -a <node>` (smartmontools 7 or later): wear, media
errors, bytes written, power-on hours, temperature, and the drive's own verdict.

smartctl's exit status is a bit mask: bits 0 and 1 (the command line was refused, the device could
not be opened or identified) mean no data; higher bits are warnings about a device that answered
(a failing attribute, errors in the log) and the JSON is read as usual. A loop device, a RAM disk or
a virtual disk has no SMART: that is a reading with a reason ("no SMART data: …"), not an error.
"""

import json
from dataclasses import asdict, dataclass, field
from typing import Any

# An NVMe "data unit" is 1,000 sectors of 512 bytes (NVMe base specification, SMART/Health log).
NVME_DATA_UNIT_BYTES = 512_000
_FAILED_BITS = 0b11
# ATA wear attributes by name; each one's normalised value counts down from 100 (new) as the
# flash wears, so wear used is 100 - value. Vendors name the same idea differently.
ATA_WEAR_ATTRIBUTES = ("Wear_Leveling_Count", "Media_Wearout_Indicator", "Percent_Lifetime_Remain")


@dataclass(frozen=True)
class SmartHealth:
    """One reading. `none_reason` is set (and every figure None) when the device gave no data."""

    protocol: str = ""  # "NVMe", "ATA", "SCSI"
    wear_pct_used: float | None = None
    media_errors: int | None = None  # NVMe media errors; ATA reallocated sectors
    bytes_written: int | None = None
    power_on_hours: int | None = None
    critical_warning: int | None = None  # NVMe's bit field; 0 is none
    temperature_c: int | None = None
    passed: bool | None = None  # the drive's overall self-assessment
    none_reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        """The parsed numbers, as the reading's columns take them."""
        return {k: v for k, v in asdict(self).items() if k not in ("raw", "none_reason")}


def no_smart(reason: str, raw: dict[str, Any] | None = None) -> SmartHealth:
    return SmartHealth(none_reason=f"no SMART data: {reason}", raw=raw or {})


def _messages(data: dict[str, Any]) -> list[str]:
    found = data.get("smartctl", {}).get("messages", [])
    return [str(m.get("string", "")).strip() for m in found if isinstance(m, dict) and m.get("string")]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _nvme(data: dict[str, Any], log: dict[str, Any]) -> SmartHealth:
    units = _int(log.get("data_units_written"))
    return SmartHealth(
        protocol="NVMe",
        wear_pct_used=float(used) if (used := _int(log.get("percentage_used"))) is not None else None,
        media_errors=_int(log.get("media_errors")),
        bytes_written=units * NVME_DATA_UNIT_BYTES if units is not None else None,
        power_on_hours=_int(log.get("power_on_hours")),
        critical_warning=_int(log.get("critical_warning")),
        temperature_c=_int(log.get("temperature")),
        passed=data.get("smart_status", {}).get("passed"),
        raw=data,
    )


def _ata(data: dict[str, Any], table: list[dict[str, Any]]) -> SmartHealth:
    by_name = {str(row.get("name")): row for row in table if isinstance(row, dict)}

    def raw_value(name: str) -> int | None:
        return _int(by_name.get(name, {}).get("raw", {}).get("value"))

    wear = next((by_name[name]["value"] for name in ATA_WEAR_ATTRIBUTES if name in by_name), None)
    lbas = raw_value("Total_LBAs_Written")
    block = _int(data.get("logical_block_size")) or 512
    # Power_On_Hours' raw value packs minutes and more in its high bytes on some drives;
    # smartctl's power_on_time.hours is already decoded.
    hours = _int(data.get("power_on_time", {}).get("hours"))
    return SmartHealth(
        protocol="ATA",
        wear_pct_used=float(100 - wear) if isinstance(wear, int) else None,
        media_errors=raw_value("Reallocated_Sector_Ct"),
        bytes_written=lbas * block if lbas is not None else None,
        power_on_hours=hours if hours is not None else raw_value("Power_On_Hours"),
        temperature_c=_int(data.get("temperature", {}).get("current")),
        passed=data.get("smart_status", {}).get("passed"),
        raw=data,
    )


def smart_from_json(text: str) -> SmartHealth:
    """Parse smartctl's JSON output (whatever its exit status was)."""
    try:
        data = json.loads(text)
    except ValueError:
        first = text.strip().splitlines()[0] if text.strip() else "no output"
        return no_smart(f"smartctl gave no JSON (smartmontools 7 or later is needed): {first[:200]}")
    if not isinstance(data, dict):
        return no_smart("smartctl's JSON is not an object")
    status = _int(data.get("smartctl", {}).get("exit_status")) or 0
    messages = _messages(data)
    if status & _FAILED_BITS:
        return no_smart("; ".join(messages) or f"smartctl failed (exit status {status})", data)
    log = data.get("nvme_smart_health_information_log")
    if isinstance(log, dict):
        return _nvme(data, log)
    table = data.get("ata_smart_attributes", {}).get("table")
    if isinstance(table, list):
        return _ata(data, table)
    if data.get("smart_support", {}).get("available") is False:
        return no_smart(f"{data.get('model_name') or 'the device'} does not support SMART")
    if "smart_status" in data:  # SCSI and others: the verdict only
        protocol = str(data.get("device", {}).get("protocol", ""))
        return SmartHealth(protocol=protocol, passed=data["smart_status"].get("passed"), raw=data)
    return no_smart("; ".join(messages) or "smartctl reported no health data", data)
