"""What every benchmark report says about where and on what it ran, and where reports go."""

import json
import math
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results"


def machine() -> dict[str, Any]:
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    # Changes to the code, not to the results this writes.
    status = ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results"]
    changed = subprocess.run(status, capture_output=True, text=True)
    if changed.stdout.strip():  # measured with changes not committed yet: say so
        revision += "+changes"
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "revision": revision,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.platform(),
    }


def percentile(values: list[float], fraction: float) -> float:
    """Nearest rank, as everywhere in benchlab."""
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(fraction * len(ordered)))) - 1]


def latency_summary(latencies_ms: list[float]) -> dict[str, float]:
    return {name: percentile(latencies_ms, p) for name, p in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))}


def write_result(name: str, results: dict[str, Any], verdict: str) -> None:
    """Print the figures and the verdict, and keep them as bench/results/<name>.json."""
    print(json.dumps(results, indent=2))
    print(verdict)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps({"machine": machine(), **results}, indent=2) + "\n")
