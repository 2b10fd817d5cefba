"""The host as it is now (runs/lab/host/now.py): tuning and activity read around a probe's other
reads, on hand-made answers; and over this machine's own /proc and sysfs (read-only)."""

import os
import time
from datetime import UTC, datetime
from pathlib import Path

from runs.lab.host.now import host_now, host_now_around
from runs.lab.transport.interface import Command, CommandResult, Transport
from runs.lab.transport.local import LocalTransport
from runs.tests.lab.test_parse_activity import Proc, sample_text

TUNING = (
    "==governors\npowersave\npowersave\n==boost\n1\n==no_turbo\n==policy_boost\n==smt\n1\n"
    "==thp\nalways [madvise] never\n==swappiness\n10\n==numa\n/sys/devices/system/node/node0\n"
)


class AnsweringHost(Transport):
    """Answers the tuning snippet with TUNING and each activity sample with the next of `samples`;
    notes what was asked, in order."""

    label = "lab1"

    def __init__(self, samples: list[str]) -> None:
        self.samples, self.asked = samples, list[str]()

    def execute(self, command: Command) -> CommandResult:
        script = command.argv[2]
        if "==governors" in script:
            self.asked.append("tuning")
            return CommandResult(command.line, 0, TUNING, "")
        self.asked.append("sample")
        return CommandResult(command.line, 0, self.samples.pop(0), "")

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        raise AssertionError("a reading writes nothing")

    def close(self) -> None:
        pass


def test_a_probes_reads_are_the_window_between_two_samples_and_the_tuning_is_read_too() -> None:
    # 10 s apart: the backup took 600 ticks of 100 a second (60 %), the idle daemon 1 (0.1 %).
    host = AnsweringHost([
        sample_text(100.0, 3.5, [Proc(600, "backup", 5000), Proc(7, "chronyd", 20)], cpus=4),
        sample_text(110.0, 3.9, [Proc(600, "backup", 5600), Proc(7, "chronyd", 21)], cpus=4),
    ])  # fmt: skip
    before = datetime.now(UTC)

    def probe() -> str:
        host.asked.append("probe")
        return "facts"

    now, found = host_now_around(host, probe, window_s=0)

    assert found == "facts" and host.asked == ["sample", "probe", "tuning", "sample"]
    assert before <= now.read_at <= datetime.now(UTC)
    assert now.as_json() == {
        "read_at": now.read_at.isoformat(),
        "host": {
            "governor": "powersave",
            "boost": True,
            "smt": True,
            "thp": "madvise",
            "swappiness": 10,
            "numa_nodes": 1,
        },
        "during": {
            "load_1m_start": 3.5,
            "load_1m_end": 3.9,
            "cpu_count": 4,
            "busiest": [
                {"pid": 600, "command": "backup", "cpu_pct": 60.0},
                {"pid": 7, "command": "chronyd", "cpu_pct": 0.1},
            ],
        },
    }


def test_a_reading_on_its_own_waits_the_window_between_its_samples() -> None:
    host = AnsweringHost([sample_text(100.0, 0.1, []), sample_text(100.3, 0.1, [])])

    started = time.monotonic()
    now = host_now(host, window_s=0.3)

    assert time.monotonic() - started >= 0.3
    assert now.during == {"load_1m_start": 0.1, "load_1m_end": 0.1, "cpu_count": 4, "busiest": []}


def test_this_machine_read_now() -> None:
    now = host_now(LocalTransport(), window_s=0.2)

    assert now.tuning.swappiness == int(Path("/proc/sys/vm/swappiness").read_text())
    assert now.during["cpu_count"] == os.cpu_count() and now.during["load_1m_start"] is not None
    assert isinstance(now.during["busiest"], list)
