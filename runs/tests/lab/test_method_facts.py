"""A run's facts for issue 32 (runs/lab/benchmark/method_readings.py): the server's answer on
memory and durability, the contract's keys, the resume record keeping what was read before the
window, a read that fails leaving its fact unknown, and the snippets on this machine's own
sysfs and /proc (read-only)."""

import json
import os
import time
from pathlib import Path

import pytest

from runs.lab.benchmark.method_readings import (
    MethodReadings,
    facts_before,
    method_readings_from_record,
    note_window_end,
)
from runs.lab.benchmark.resume import parse_resume_record
from runs.lab.errors import ConnectionLost
from runs.lab.host.activity import activity_sample
from runs.lab.host.tuning import device_queue, host_tuning
from runs.lab.parse.activity import ActivitySample, ProcessCpu
from runs.lab.parse.server_settings import ServerFacts, in_bytes, in_seconds, server_facts_from
from runs.lab.parse.tuning import DeviceQueue, HostTuning
from runs.lab.postgres.cluster import Cluster
from runs.lab.transport.interface import Command, CommandResult, Transport
from runs.lab.transport.local import LocalTransport
from runs.tests.lab.test_resume_record import SPEC, record

# What server_facts' query returns from PostgreSQL 15 with shared_buffers = 32MB (8 kB pages).
ANSWER = {
    "database_bytes": 23_165_411,
    "settings": {
        "checkpoint_timeout": ["300", "s"],
        "fsync": ["on", None],
        "full_page_writes": ["on", None],
        "max_wal_size": ["1024", "MB"],
        "shared_buffers": ["4096", "8kB"],
        "synchronous_commit": ["off", None],
    },
}
FACTS = MethodReadings(
    server=server_facts_from(json.dumps(ANSWER)),
    device=DeviceQueue("write back", "none"),
    host=HostTuning(None, None, False, "madvise", 60, 1),
    start=ActivitySample(100.0, 0.5, 100, 2, (ProcessCpu(7, "backup", 100, 5),)),
)


def test_the_servers_answer_in_bytes_and_seconds() -> None:
    facts = server_facts_from(json.dumps(ANSWER))

    assert facts.database_bytes == 23_165_411 and facts.shared_buffers_bytes == 32 * 2**20
    assert facts.settings == {
        "fsync": "on",
        "synchronous_commit": "off",
        "full_page_writes": "on",
        "checkpoint_timeout_s": 300,
        "max_wal_size_bytes": 2**30,
    }


def test_units_follow_what_the_server_says_not_an_assumed_page_size() -> None:
    assert in_bytes("16384", "4kB") == 64 * 2**20  # a 4 kB build's shared_buffers unit
    assert in_bytes("2048", "16MB") == 32 * 2**30
    assert (in_bytes("1", "s"), in_bytes("x", "kB"), in_bytes("1", None)) == (None, None, None)
    assert (in_seconds("5", "min"), in_seconds("1500", "ms"), in_seconds("5", "kB")) == (300, 2, None)


def test_a_partial_answer_leaves_the_rest_unknown_and_a_non_answer_is_refused() -> None:
    facts = server_facts_from(json.dumps({"database_bytes": None, "settings": {"fsync": ["off", None]}}))

    assert facts.database_bytes is None and facts.shared_buffers_bytes is None
    assert facts.settings["fsync"] == "off" and facts.settings["max_wal_size_bytes"] is None
    with pytest.raises(ValueError):
        server_facts_from("ERROR:  relation does not exist")


def test_the_environment_holds_exactly_the_contracts_keys() -> None:
    facts = MethodReadings(FACTS.server, FACTS.device, FACTS.host, FACTS.start)
    facts.end = ActivitySample(110.0, 1.5, 100, 2, (ProcessCpu(7, "backup", 600, 5),))

    assert facts.as_environment() == {
        "database_bytes": 23_165_411,
        "shared_buffers_bytes": 32 * 2**20,
        "settings": {
            "fsync": "on",
            "synchronous_commit": "off",
            "full_page_writes": "on",
            "checkpoint_timeout_s": 300,
            "max_wal_size_bytes": 2**30,
        },
        "device": {"write_cache": "write back", "scheduler": "none"},
        "host": {"governor": None, "boost": None, "smt": False, "thp": "madvise", "swappiness": 60, "numa_nodes": 1},
        "during": {
            "load_1m_start": 0.5,
            "load_1m_end": 1.5,
            "cpu_count": 2,
            "busiest": [{"pid": 7, "command": "backup", "cpu_pct": 50.0}],
        },
        "during_clients": {},  # pgbench ran on the server
    }
    nothing = MethodReadings().as_environment()
    assert nothing["during"] == {"load_1m_start": None, "load_1m_end": None, "cpu_count": None, "busiest": None}
    assert nothing["database_bytes"] is None and set(nothing["settings"].values()) == {None}


def test_the_facts_read_before_the_window_survive_the_resume_record() -> None:
    written = record()
    written["method"] = json.loads(json.dumps(FACTS.as_record()))

    read = parse_resume_record(written, SPEC)

    assert read.method == FACTS and read.as_json() == written


def test_each_client_hosts_window_is_recorded_by_name_and_its_start_survives_the_resume_record() -> None:
    # lab2: yes started during the window; lab3 was not read at the start (a lost connection).
    lab2_start = ActivitySample(50.0, 1.75, 100, 2, (ProcessCpu(3, "sshd", 10, 1),))
    lab2_end = ActivitySample(60.0, 2.0, 100, 2, (ProcessCpu(3, "sshd", 12, 1), ProcessCpu(9, "yes", 800, 5200)))
    facts = MethodReadings(FACTS.server, FACTS.device, FACTS.host, FACTS.start,
                           clients_start={"lab2": lab2_start, "lab3": None})  # fmt: skip
    written = record()
    written["method"] = json.loads(json.dumps(facts.as_record()))

    read = parse_resume_record(written, SPEC).method
    read.clients_end = {"lab2": lab2_end, "lab3": ActivitySample(60.0, 0.1, 100, 2)}

    assert read.clients_start == facts.clients_start
    assert read.as_environment()["during_clients"] == {
        # yes started 52 s after boot, inside the window: its 800 ticks in 10 s at 100 a second are 80 %;
        # sshd's 2 more ticks 0.2 %.
        "lab2": {
            "load_1m_start": 1.75,
            "load_1m_end": 2.0,
            "cpu_count": 2,
            "busiest": [{"pid": 9, "command": "yes", "cpu_pct": 80.0}, {"pid": 3, "command": "sshd", "cpu_pct": 0.2}],
        },
        "lab3": {"load_1m_start": None, "load_1m_end": 0.1, "cpu_count": 2, "busiest": None},
    }


def test_a_record_written_before_client_hosts_were_sampled_resumes_with_none() -> None:
    older = record()
    older["method"] = FACTS.as_record()
    del older["method"]["clients_start"]
    bad = record()
    bad["method"] = FACTS.as_record() | {"clients_start": [["lab2", None]]}

    assert parse_resume_record(older, SPEC).method == FACTS
    with pytest.raises(ValueError, match="not an object by host name"):
        method_readings_from_record(bad["method"])


def test_a_record_without_facts_or_with_bad_ones_still_resumes_with_them_unknown() -> None:
    older = record()
    del older["method"]  # written by a benchlab before issue 32
    bad = record()
    bad["method"] = FACTS.as_record() | {"database_bytes": "23 MB"}

    assert parse_resume_record(older, SPEC).method == MethodReadings()
    assert parse_resume_record(bad, SPEC).method == MethodReadings()
    with pytest.raises(ValueError, match="not whole numbers"):
        method_readings_from_record(bad["method"])


class LostHost(Transport):
    """A host whose connection is gone: every command raises."""

    label = "lab1"

    def execute(self, command: Command) -> CommandResult:
        raise ConnectionLost(f"lost the SSH connection to {self.label}")

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        raise ConnectionLost(f"lost the SSH connection to {self.label}")

    def close(self) -> None:
        pass


def test_facts_that_cannot_be_read_are_unknown_and_the_run_goes_on() -> None:
    cluster = Cluster(bin_dir="/usr/lib/postgresql/15/bin", base_dir="/mnt/benchlab/x/postgres", port=54321)

    run_dir = "/var/lib/benchlab/runs/run-1-0123456789ab"
    facts = facts_before(LostHost(), cluster, "bench", "loop3", run_dir, [("lab2", LostHost())])
    note_window_end(facts, LostHost(), run_dir, [("lab2", LostHost())])

    assert facts == MethodReadings(server=ServerFacts(), device=DeviceQueue(), host=HostTuning(), start=None,
                                   clients_start={"lab2": None}, clients_end={"lab2": None})  # fmt: skip
    assert facts.as_environment()["during_clients"]["lab2"]["busiest"] is None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def test_the_snippets_read_this_machines_sysfs_and_proc(tmp_path: Path) -> None:
    local = LocalTransport()

    tuning = host_tuning(local)
    queue = device_queue(local, "loop0")
    start = activity_sample(local, str(tmp_path))
    time.sleep(0.2)
    end = activity_sample(local, str(tmp_path))

    assert tuning.swappiness == int(_read("/proc/sys/vm/swappiness") or -1)
    assert tuning.thp is not None and f"[{tuning.thp}]" in (_read("/sys/kernel/mm/transparent_hugepage/enabled") or "")
    smt = _read("/sys/devices/system/cpu/smt/active")
    assert tuning.smt == ({"1": True, "0": False}.get(smt) if smt is not None else None)
    assert tuning.numa_nodes == (len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or None)
    if Path("/sys/block/loop0").exists():
        assert queue.write_cache == _read("/sys/block/loop0/queue/write_cache")
        assert queue.scheduler and f"[{queue.scheduler}]" in (_read("/sys/block/loop0/queue/scheduler") or "")
    assert device_queue(local, None) == DeviceQueue() and device_queue(local, "../../etc") == DeviceQueue()
    assert start.uptime_s and end.uptime_s and end.uptime_s > start.uptime_s and start.cpu_count
    assert start.clock_ticks == 100 and start.load_1m is not None
    assert os.getpid() in {p.pid for p in end.others}  # this test is another process to the sampler
