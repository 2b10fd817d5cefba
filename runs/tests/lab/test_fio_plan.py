"""fio's settings, their validation and the command line built from them: pure, no host."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runs.lab.errors import InvalidOption
from runs.lab.fio.plan import JOB_NAMES, FioPlan, FioSettings, MiB, fio_command

ROOT = Path(__file__).resolve().parents[3]


def plan(**changes: object) -> FioPlan:
    settings = FioSettings(**changes)  # type: ignore[arg-type]
    return FioPlan(settings, "/dev/loop7", "/var/lib/benchlab/runs/r1/fio.json")


def job_sections(argv: list[str]) -> list[list[str]]:
    """argv after the global options, one list per --name=…"""
    sections: list[list[str]] = []
    for arg in argv:
        if arg.startswith("--name="):
            sections.append([])
        if sections:
            sections[-1].append(arg)
    return sections


def test_the_defaults_are_six_jobs_of_thirty_seconds_on_one_gib() -> None:
    settings = FioSettings()
    settings.validate()

    assert settings.jobs == JOB_NAMES
    assert (settings.size_bytes, settings.runtime_s, settings.ramp_s) == (2**30, 30, 2)
    assert settings.expected_seconds() == 6 * 32


def test_the_command_has_global_options_then_one_section_per_job_in_standard_order() -> None:
    argv = fio_command(plan(runtime_s=5, ramp_s=1, jobs=("rand-write-qd1", "rand-read-qd1", "seq-read")))

    head = argv[: argv.index("--name=seq-read")]
    assert head == [
        "fio",
        "--output-format=json",
        "--output=/var/lib/benchlab/runs/r1/fio.json",
        "--eta=never",
        "--thread",
        "--filename=/dev/loop7",
        f"--size={2**30}",
        "--direct=1",
        "--ioengine=libaio",
        "--time_based",
        "--runtime=5s",
        "--ramp_time=1s",
        "--lat_percentiles=1",
        "--percentile_list=50:99",
    ]
    # Reads of data after the writes that put it there, whatever order they were chosen in.
    assert job_sections(argv) == [
        ["--name=seq-read", "--rw=read", "--bs=1M", "--iodepth=8", "--stonewall"],
        ["--name=rand-read-qd1", "--rw=randread", "--bs=4k", "--iodepth=1", "--stonewall"],
        ["--name=rand-write-qd1", "--rw=randwrite", "--bs=4k", "--iodepth=1", "--stonewall"],
    ]


def test_every_standard_job_has_its_queue_depth_and_block_size() -> None:
    sections = {s[0].removeprefix("--name="): s[1:4] for s in job_sections(fio_command(plan()))}

    assert sections == {
        "seq-write": ["--rw=write", "--bs=1M", "--iodepth=8"],
        "seq-read": ["--rw=read", "--bs=1M", "--iodepth=8"],
        "rand-read-qd1": ["--rw=randread", "--bs=4k", "--iodepth=1"],
        "rand-read-qd32": ["--rw=randread", "--bs=4k", "--iodepth=32"],
        "rand-write-qd1": ["--rw=randwrite", "--bs=4k", "--iodepth=1"],
        "rand-write-qd32": ["--rw=randwrite", "--bs=4k", "--iodepth=32"],
    }


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"size_bytes": 8 * MiB}, "size must be between 16 MiB and 64 TiB, not 8388608 bytes"),
        ({"size_bytes": 100 * MiB + 1}, "whole number of MiB"),
        ({"runtime_s": 0}, "runtime per job must be 1 to 3600 s, not 0"),
        ({"runtime_s": 3601}, "runtime per job must be 1 to 3600 s"),
        ({"ramp_s": -1}, "ramp time per job must be 0 to 600 s, not -1"),
        ({"jobs": ()}, "choose at least one fio job of seq-write, seq-read"),
        ({"jobs": ("rand-read-qd64",)}, "unknown fio job 'rand-read-qd64'; the jobs are seq-write"),
        ({"jobs": ("seq-read", "seq-read")}, "each fio job may be chosen once"),
        ({"ioengine": "windowsaio"}, "engine must be one of libaio, io_uring, psync, not 'windowsaio'"),
    ],
)
def test_bad_settings_are_refused_saying_what_is_allowed(changes: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidOption, match=message):
        fio_command(plan(**changes))


@pytest.mark.parametrize(
    "target",
    [
        "dev/loop7",  # relative
        "/srv/data/a:b",  # fio would take two files
        "/srv/data/$HOME",
        "/srv/data/../../etc/passwd",
        "/srv//data",
        "/srv/data/x --rw=trim",
        "/srv/data/x\n--name=evil",
    ],
)
def test_a_target_fio_could_misread_is_refused(target: str) -> None:
    with pytest.raises(InvalidOption, match="must be an absolute path of letters, digits"):
        fio_command(FioPlan(FioSettings(), target, "/var/lib/benchlab/runs/r1/fio.json"))


def test_io_uring_can_be_chosen() -> None:
    assert "--ioengine=io_uring" in fio_command(plan(ioengine="io_uring"))


def test_the_settings_and_the_parser_import_nothing_that_acts_on_a_host() -> None:
    """The web side validates FioSettings and reads results without a machine (fresh interpreter:
    what this process has imported cannot hide an import)."""
    code = (
        "import json, sys; import runs.lab.fio.plan, runs.lab.parse.fio; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('runs') or m in ('django', 'paramiko'))))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)

    imported = json.loads(found.stdout)
    assert imported == [
        "runs", "runs.lab", "runs.lab.errors", "runs.lab.fio", "runs.lab.fio.plan",
        "runs.lab.parse", "runs.lab.parse.fio",
    ]  # fmt: skip
