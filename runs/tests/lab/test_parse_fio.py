"""fio's JSON parser against real captured output and hand-made broken variants of it.

fio-3.33-file-all-jobs.json: `fio_command` of the six standard jobs (16 MiB, 1 s each, no ramp)
on a file in /var/tmp of this machine; fio-3.33-cancelled.json: the same with 30 s per job,
stopped with SIGINT after ~3 s (fio wrote "fio: terminating on signal 2" before its JSON);
fio-3.33-raw-hdd.json: `fio_command` of four jobs (64 MiB, 3 s each after 1 s of ramp) on the
raw FUSE-delayed "HDD" (/dev/loop7) of a virtual lab host.
Expected values were read off the fixture text by eye.
"""

import copy
import json
from dataclasses import asdict
from typing import Any

import pytest

from runs.lab.parse.fio import FioOutputInvalid, parse_fio_json
from runs.tests.captured import captured


def all_jobs() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(captured("fio-3.33-file-all-jobs.json"))
    return data


def test_it_parses_every_standard_job_of_a_real_run() -> None:
    output = parse_fio_json(captured("fio-3.33-file-all-jobs.json"))

    assert output.fio_version == "fio-3.33"
    assert output.notes == ()
    assert list(output.jobs) == [
        "seq-write",
        "seq-read",
        "rand-read-qd1",
        "rand-read-qd32",
        "rand-write-qd1",
        "rand-write-qd32",
    ]
    qd1 = output.jobs["rand-read-qd1"]
    assert (qd1.rw, qd1.bs, qd1.iodepth, qd1.runtime_ms) == ("randread", "4k", 1, 1000)
    assert qd1.read is not None
    assert asdict(qd1.read) == pytest.approx(
        {
            "bw_mb_s": 149.763836,
            "iops": 36563.436563,
            "lat_p50_ms": 0.025728,
            "lat_p99_ms": 0.043264,
            "lat_mean_ms": 0.026867422978,
            "io_bytes": 149913600,
            "runtime_ms": 1001,
        }
    )
    seq_write = output.jobs["seq-write"]
    assert (seq_write.bs, seq_write.iodepth) == ("1M", 8)
    assert seq_write.write is not None
    assert seq_write.write.bw_mb_s == pytest.approx(1621.275662)
    assert seq_write.write.lat_p99_ms == pytest.approx(21.62688)


def test_it_parses_a_raw_run_on_the_delayed_hdd() -> None:
    output = parse_fio_json(captured("fio-3.33-raw-hdd.json"))

    assert list(output.jobs) == ["seq-read", "rand-read-qd1", "rand-read-qd32", "rand-write-qd1"]
    qd1, qd32 = output.jobs["rand-read-qd1"].read, output.jobs["rand-read-qd32"].read
    assert qd1 is not None and qd32 is not None
    assert (qd1.iops, qd1.lat_p50_ms, qd1.lat_p99_ms) == pytest.approx((194.139194, 5.144576, 6.455296))
    # One request at a time on this disk: 32 queued wait for each other.
    assert (qd32.iops, qd32.lat_p50_ms) == pytest.approx((175.094817, 168.820736))
    seq_read = output.jobs["seq-read"].read
    assert seq_read is not None and seq_read.bw_mb_s == pytest.approx(141.161066)
    write = output.jobs["rand-write-qd1"].write
    assert write is not None and write.lat_mean_ms == pytest.approx(5.237705844677)


def test_a_direction_a_job_did_not_use_is_none_not_zeros() -> None:
    output = parse_fio_json(captured("fio-3.33-file-all-jobs.json"))

    assert output.jobs["rand-read-qd32"].write is None
    assert output.jobs["rand-write-qd1"].read is None
    assert output.jobs["rand-write-qd1"].write is not None


def test_fios_own_lines_before_the_json_are_notes_and_a_cancelled_run_is_refused() -> None:
    with pytest.raises(FioOutputInvalid, match="'seq-read' did no I/O at all"):
        parse_fio_json(captured("fio-3.33-cancelled.json"))

    # Its first job did run: without the jobs that never began, it parses, with fio's note.
    text = captured("fio-3.33-cancelled.json")
    data = json.loads(text[text.index("\n{") :])
    data["jobs"] = data["jobs"][:1]
    output = parse_fio_json("fio: terminating on signal 2\n" + json.dumps(data))
    assert output.notes == ("fio: terminating on signal 2",)
    assert output.jobs["seq-write"].write is not None


def test_missing_latency_percentiles_are_a_clear_error() -> None:
    data = all_jobs()
    del data["jobs"][2]["read"]["lat_ns"]["percentile"]

    with pytest.raises(FioOutputInvalid, match=r"'rand-read-qd1', read: fio must run with --lat_percentiles=1"):
        parse_fio_json(json.dumps(data))


def test_a_missing_p99_names_what_fio_listed() -> None:
    data = all_jobs()
    data["jobs"][0]["write"]["lat_ns"]["percentile"] = {"50.000000": 1000, "90.000000": 2000}

    with pytest.raises(FioOutputInvalid, match=r"no p99 latency in job 'seq-write', write \(it lists 50.000000, 90"):
        parse_fio_json(json.dumps(data))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["jobs"][1].update(error=5), "fio job 'seq-read' failed with error 5"),
        (lambda d: d.update(jobs=[]), "lists no jobs"),
        (lambda d: d.pop("fio version"), "no 'fio version'"),
        (lambda d: d["jobs"][3]["read"].update(iops="fast"), "iops='fast' in job 'rand-read-qd32', read, not a number"),
        (lambda d: d["jobs"][4]["job options"].update(iodepth="$depth"), "iodepth '\\$depth', not a number"),
        (lambda d: d["jobs"][5].update(jobname="seq-write"), "two jobs named 'seq-write'"),
        (lambda d: d["jobs"][2].pop("read"), "no 'read' in job 'rand-read-qd1'"),
    ],
)
def test_broken_output_is_refused_with_what_is_wrong(change: Any, message: str) -> None:
    data = copy.deepcopy(all_jobs())
    change(data)

    with pytest.raises(FioOutputInvalid, match=message):
        parse_fio_json(json.dumps(data))


@pytest.mark.parametrize("text", ["", "fio: pid 12, err=2/file:filesetup.c:not found\n", "{ not json"])
def test_output_that_is_not_fios_json_is_refused(text: str) -> None:
    with pytest.raises(FioOutputInvalid, match=r"fio's (output holds no JSON|JSON does not parse)"):
        parse_fio_json(text)


def test_options_fio_did_not_repeat_per_job_come_from_the_global_ones_or_fios_defaults() -> None:
    data = all_jobs()
    job = data["jobs"][2]
    job["job options"] = {"name": "rand-read-qd1"}
    data["global options"]["bs"] = "8k"
    output = parse_fio_json(json.dumps(data))

    parsed = output.jobs["rand-read-qd1"]
    assert (parsed.rw, parsed.bs, parsed.iodepth) == ("read", "8k", 1)
