"""fio's JSON output (`--output-format=json`) -> one result per job. Pure: text in, dataclasses out.

Units as the results show them: bandwidth in MB/s (10^6 bytes per second, as drive makers
quote it), latency in milliseconds. Latency is fio's total latency (`lat_ns`: submission plus
completion), whose percentiles fio reports only with `--lat_percentiles=1` (fio_plan.py sets
it). A direction a job did not use (the writes of a read job) is None, not zeros.

fio may write lines of its own before the JSON into the same file ("fio: terminating on
signal 2" when it was stopped); they are kept as notes, not taken for a parse error.
"""

import json
import math
from dataclasses import dataclass
from typing import Any

from runs.lab.errors import LabError

DIRECTIONS = ("read", "write")


class FioOutputInvalid(LabError):
    """fio's output is not what benchlab asked for: the message says what is missing where."""


@dataclass(frozen=True)
class FioDirectionResult:
    """One direction (read or write) of one job."""

    bw_mb_s: float
    iops: float
    lat_p50_ms: float
    lat_p99_ms: float
    lat_mean_ms: float
    io_bytes: int
    runtime_ms: int


@dataclass(frozen=True)
class FioJobResult:
    name: str
    rw: str
    bs: str
    iodepth: int
    runtime_ms: int  # the job's measured time (without ramp)
    read: FioDirectionResult | None
    write: FioDirectionResult | None


@dataclass(frozen=True)
class FioOutput:
    fio_version: str
    jobs: dict[str, FioJobResult]  # by job name, in the order fio ran them
    notes: tuple[str, ...]  # fio's own lines before the JSON


def _split_notes(text: str) -> tuple[tuple[str, ...], str]:
    """The lines before the JSON object, and the JSON itself."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith("{"):
            notes = tuple(note.strip() for note in lines[:index] if note.strip())
            return notes, "".join(lines[index:])
    raise FioOutputInvalid(f"fio's output holds no JSON object; it begins: {text[:200]!r}")


def _field(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise FioOutputInvalid(f"fio's JSON has no {key!r} in {where}")
    return data[key]


def _number(data: dict[str, Any], key: str, where: str) -> float:
    value = _field(data, key, where)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FioOutputInvalid(f"fio's JSON has {key}={value!r} in {where}, not a number")
    return float(value)


def _percentile(percentiles: dict[str, Any], wanted: float, where: str) -> float:
    """fio's keys are texts like "99.000000": compare them as numbers."""
    for key in percentiles:
        try:
            matches = float(key) == wanted
        except ValueError:
            continue
        if matches:
            return _number(percentiles, key, where) / 1e6
    raise FioOutputInvalid(
        f"fio's JSON has no p{wanted:g} latency in {where} (it lists {', '.join(percentiles) or 'none'}); "
        f"benchlab asks for it with --percentile_list"
    )


def _direction(data: dict[str, Any], job: str, direction: str) -> FioDirectionResult | None:
    where = f"job {job!r}, {direction}"
    stats = _field(data, direction, f"job {job!r}")
    io_bytes = int(_number(stats, "io_bytes", where))
    if io_bytes == 0:
        return None  # this job did not use this direction
    latency = _field(stats, "lat_ns", where)
    if not isinstance(latency, dict) or not latency.get("percentile"):
        raise FioOutputInvalid(
            f"fio's JSON has no total-latency percentiles (lat_ns.percentile) in {where}: "
            "fio must run with --lat_percentiles=1"
        )
    percentiles = latency["percentile"]
    return FioDirectionResult(
        bw_mb_s=_number(stats, "bw_bytes", where) / 1e6,
        iops=_number(stats, "iops", where),
        lat_p50_ms=_percentile(percentiles, 50, where),
        lat_p99_ms=_percentile(percentiles, 99, where),
        lat_mean_ms=_number(latency, "mean", f"{where}, lat_ns") / 1e6,
        io_bytes=io_bytes,
        runtime_ms=int(_number(stats, "runtime", where)),
    )


def _job(data: dict[str, Any], global_options: dict[str, Any]) -> FioJobResult:
    name = str(_field(data, "jobname", "a job"))
    error = _field(data, "error", f"job {name!r}")
    if error:
        raise FioOutputInvalid(f"fio job {name!r} failed with error {error}")
    # A job's own options, over the global ones; fio's defaults where neither says.
    options = global_options | _field(data, "job options", f"job {name!r}")
    iodepth = str(options.get("iodepth", "1"))
    if not iodepth.isdigit():
        raise FioOutputInvalid(f"fio job {name!r} has iodepth {iodepth!r}, not a number")
    read, write = (_direction(data, name, direction) for direction in DIRECTIONS)
    if read is None and write is None:
        raise FioOutputInvalid(f"fio job {name!r} did no I/O at all (was it stopped before it began?)")
    return FioJobResult(
        name=name,
        rw=str(options.get("rw", "read")),
        bs=str(options.get("bs", "4k")),
        iodepth=int(iodepth),
        runtime_ms=int(_number(data, "job_runtime", f"job {name!r}")),
        read=read,
        write=write,
    )


def parse_fio_json(text: str) -> FioOutput:
    """Parse what `fio --output-format=json --output=FILE` wrote to FILE."""
    notes, document = _split_notes(text)
    try:
        data = json.loads(document)
    except json.JSONDecodeError as exc:
        raise FioOutputInvalid(f"fio's JSON does not parse: {exc}") from exc
    if not isinstance(data, dict):
        raise FioOutputInvalid("fio's JSON is not an object")
    jobs_data = _field(data, "jobs", "the output")
    if not isinstance(jobs_data, list) or not jobs_data:
        raise FioOutputInvalid("fio's JSON lists no jobs")
    global_options = data.get("global options") or {}
    jobs: dict[str, FioJobResult] = {}
    for job_data in jobs_data:
        job = _job(job_data, global_options)
        if job.name in jobs:
            raise FioOutputInvalid(f"fio's JSON has two jobs named {job.name!r}")
        jobs[job.name] = job
    return FioOutput(fio_version=str(_field(data, "fio version", "the output")), jobs=jobs, notes=notes)
