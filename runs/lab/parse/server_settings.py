"""What the running server says about the run's memory and durability: its databases' size,
shared_buffers, and the settings that decide whether a commit survives a crash (read by
runs/lab/benchmark/method_readings.py as one JSON object). Pure: tested on hand-made answers.

pg_settings gives a value in its base unit ("16384" of "8kB"); a build with another page size
says "4kB" or "32kB", so the unit is read, not assumed.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any

from runs.lab.postgres.setting_values import MEMORY_UNITS

DURABILITY = ("fsync", "synchronous_commit", "full_page_writes")
SETTINGS = ("shared_buffers", *DURABILITY, "checkpoint_timeout", "max_wal_size")
_MEMORY_UNIT = re.compile(r"(\d*)(B|kB|MB|GB|TB)")
_SECONDS = {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class ServerFacts:
    database_bytes: int | None = None
    shared_buffers_bytes: int | None = None
    # fsync, synchronous_commit, full_page_writes as words; checkpoint_timeout_s, max_wal_size_bytes
    settings: dict[str, Any] = field(default_factory=dict)


def in_bytes(value: str, unit: str | None) -> int | None:
    """A memory setting's value in bytes ("16384", "8kB" → 134217728); None if not one."""
    found = _MEMORY_UNIT.fullmatch(unit or "")
    if found is None or not value.lstrip("-").isdigit():
        return None
    return int(value) * int(found.group(1) or 1) * MEMORY_UNITS[found.group(2)]


def in_seconds(value: str, unit: str | None) -> int | None:
    """A time setting's value in whole seconds ("300", "s" → 300); None if not one."""
    factor = _SECONDS.get(unit or "")
    if factor is None or not value.lstrip("-").isdigit():
        return None
    return round(int(value) * factor)


def server_facts_from(text: str) -> ServerFacts:
    """ServerFacts from {"database_bytes": n, "settings": {name: [setting, unit]}}; what is
    missing or malformed is None. ValueError when the text is not such an object at all."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the server's facts are not an object")
    size = data.get("database_bytes")
    listed = data.get("settings")
    settings = listed if isinstance(listed, dict) else {}

    def setting(name: str) -> tuple[str, str | None]:
        pair = settings.get(name)
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str):
            return pair[0], pair[1] if isinstance(pair[1], str) else None
        return "", None

    words: dict[str, Any] = {name: setting(name)[0] or None for name in DURABILITY}
    words["checkpoint_timeout_s"] = in_seconds(*setting("checkpoint_timeout"))
    words["max_wal_size_bytes"] = in_bytes(*setting("max_wal_size"))
    return ServerFacts(
        database_bytes=size if isinstance(size, int) and not isinstance(size, bool) else None,
        shared_buffers_bytes=in_bytes(*setting("shared_buffers")),
        settings=words,
    )
