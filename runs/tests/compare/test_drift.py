"""Drift, the pure parts: changes between runs' facts (none, a kernel change, a fact older runs
did not record), which changes compared runs span, the device facts parsed from lsblk and
sysfs, and how the probed facts join a run's environment."""

import json
from datetime import UTC, datetime
from typing import Any

from runs.bench.services.drift_facts import with_drift_facts
from runs.compare.drift import Observation, changes_of, spanned
from runs.lab.host.probe import DeviceFacts, device_facts_from


def day(n: int) -> datetime:
    return datetime(2026, 11, n, 12, 0, tzinfo=UTC)


def seen(run_id: int, n: int, **facts: str | None) -> Observation:
    return Observation(run_id, day(n), facts)


def test_runs_alike_have_no_change() -> None:
    history = changes_of([seen(1, 1, kernel="6.1.0-25"), seen(2, 2, kernel="6.1.0-25"), seen(3, 3, kernel="6.1.0-25")])
    assert history.changes == [] and history.not_recorded == [] and history.latest is None


def test_a_kernel_change_is_found_between_the_last_run_before_and_the_first_after() -> None:
    history = changes_of(
        [
            seen(12, 3, kernel="6.1.0-25", cpu="Xeon"),
            seen(13, 4, kernel="6.1.0-25", cpu="Xeon"),
            seen(15, 9, kernel="6.1.0-26", cpu="Xeon"),
            seen(16, 10, kernel="6.1.0-26", cpu="Xeon"),
        ]
    )
    [change] = history.changes
    assert (change.fact, change.old, change.new) == ("kernel", "6.1.0-25", "6.1.0-26")
    assert (change.before.run_id, change.after.run_id) == (13, 15)
    assert history.latest == change
    assert change.said("lab1") == (
        "lab1: kernel changed from 6.1.0-25 to 6.1.0-26 between run 13 (4 Nov 2026) and run 15 (9 Nov 2026)"
    )


def test_a_fact_older_runs_did_not_record_is_not_a_change() -> None:
    history = changes_of(
        [
            seen(1, 1, kernel="6.1", firmware=None),
            seen(2, 2, kernel="6.1", firmware=""),
            seen(3, 3, kernel="6.1", firmware="FW1"),
            seen(4, 4, kernel="6.1", firmware=None),  # a probe that failed: silence again
            seen(5, 5, kernel="6.1", firmware="FW1"),
        ]
    )
    assert history.changes == []
    [note] = history.not_recorded
    assert (note.fact, note.since.run_id, note.earlier) == ("firmware", 3, 2)


def test_a_fact_that_applies_to_some_runs_only_is_followed_over_those() -> None:
    # Two installs on one host, runs alternating: each install's build compared with its own.
    history = changes_of(
        [
            seen(1, 1, **{"build (/a)": "15.18"}),
            seen(2, 2, **{"build (/b)": "16.4"}),
            seen(3, 3, **{"build (/a)": "15.18"}),
            seen(4, 4, **{"build (/b)": "16.5"}),
        ]
    )
    assert [(c.fact, c.old, c.new, c.before.run_id, c.after.run_id) for c in history.changes] == [
        ("build (/b)", "16.4", "16.5", 2, 4)
    ]


def test_a_change_and_back_are_two_changes() -> None:
    history = changes_of([seen(1, 1, ram="24 GiB"), seen(2, 2, ram="16 GiB"), seen(3, 3, ram="24 GiB")])
    assert [(c.old, c.new) for c in history.changes] == [("24 GiB", "16 GiB"), ("16 GiB", "24 GiB")]


def test_only_changes_with_compared_runs_on_both_sides_are_spanned() -> None:
    history = changes_of([seen(1, 1, kernel="a"), seen(2, 2, kernel="b"), seen(3, 3, kernel="c")])
    first, second = history.changes
    assert spanned(history.changes, [day(1), day(2)]) == [(first, 1, 1)]
    assert spanned(history.changes, [day(2), day(3)]) == [(second, 1, 1)]
    assert spanned(history.changes, [day(1), day(1), day(3)]) == [(first, 2, 1), (second, 2, 1)]
    assert spanned(history.changes, [day(3)]) == []


LSBLK_PARTITION = {
    "blockdevices": [
        {"name": "sda1", "path": "/dev/sda1", "pkname": "sda", "type": "part", "size": 500107862016, "rota": False,
         "model": None, "vendor": None, "serial": None, "rev": None, "wwn": "0x5002538e40000001", "tran": None},
        {"name": "sda", "path": "/dev/sda", "pkname": None, "type": "disk", "size": 500107862016, "rota": False,
         "model": "Samsung SSD 860 EVO 500GB", "vendor": "ATA     ", "serial": "S3Z1NB0K123456",
         "rev": "RVT04B6Q", "wwn": "0x5002538e40000001", "tran": "sata"},
    ]
}  # fmt: skip


def test_a_partitions_facts_are_its_disks_with_its_own_size() -> None:
    output = (
        "/dev/sda1\n/dev/sda\n==lsblk\n"
        + json.dumps(LSBLK_PARTITION)
        + "\n==firmware_rev\n==rev\nRVT04B6Q\n==backing_file\n"
    )
    facts = device_facts_from(output)
    assert facts == DeviceFacts(
        node="/dev/sda1", disk="/dev/sda", size_bytes=500107862016, model="Samsung SSD 860 EVO 500GB",
        vendor="ATA", serial="S3Z1NB0K123456", firmware="RVT04B6Q", wwn="0x5002538e40000001", transport="sata",
        rotational=False, backing_file="",
    )  # fmt: skip


def test_nvme_firmware_comes_from_firmware_rev_and_a_loop_device_says_its_image() -> None:
    nvme = {"blockdevices": [{"name": "nvme0n1", "path": "/dev/nvme0n1", "size": 1024, "model": "WD Blue SN570"}]}
    output = (
        "/dev/nvme0n1\n/dev/nvme0n1\n==lsblk\n"
        + json.dumps(nvme)
        + "\n==firmware_rev\n234110WD\n==rev\n==backing_file\n"
    )
    assert device_facts_from(output).firmware == "234110WD"
    loop = {"blockdevices": [{"name": "loop3", "path": "/dev/loop3", "size": 2147483648, "rota": False}]}
    output = (
        "/dev/loop3\n/dev/loop3\n==lsblk\n"
        + json.dumps(loop)
        + "\n==firmware_rev\n==rev\n==backing_file\n/srv/ssd.img\n"
    )
    facts = device_facts_from(output)
    assert (facts.model, facts.firmware, facts.size_bytes, facts.backing_file) == ("", "", 2147483648, "/srv/ssd.img")


def test_no_block_device_and_unreadable_listings_give_empty_facts() -> None:
    assert device_facts_from("") == DeviceFacts()
    facts = device_facts_from("/dev/sdb\n/dev/sdb\n==lsblk\nnot json\n==firmware_rev\n==rev\n==backing_file\n")
    assert facts == DeviceFacts(node="/dev/sdb", disk="/dev/sdb")


def test_drift_facts_join_the_environment_and_a_failed_probe_leaves_it_alone() -> None:
    environment: dict[str, Any] = {"device": {"name": "ssd", "model": "inventory's"}, "postgresql": {"version": "x"}}
    drift = {"device": {"model": "probed"}, "postgresql": {"configure": "'--with-openssl'"}}
    joined = with_drift_facts(environment, drift)
    assert joined["device"] == {"name": "ssd", "model": "inventory's", "probed": {"model": "probed"}}
    assert joined["postgresql"] == {"version": "x", "configure": "'--with-openssl'"}
    assert with_drift_facts({"device": {}}, {}) == {"device": {}}


def test_facts_first_recorded_by_one_run_are_noted_together() -> None:
    history = changes_of([seen(1, 1, model=None, firmware=None, kernel="6.1"), seen(2, 2, model="M", firmware="F")])
    assert [(facts, since.run_id, earlier) for facts, since, earlier in history.not_recorded_together] == [
        (["model", "firmware"], 2, 1)
    ]
