"""The record a reattaching worker finishes a run from (runs/lab/benchmark/resume.py), without a lab: it
comes from a directory on a lab host and names what is stopped, unmounted and removed as root,
so anything that is not the run's own (or the kept setup it took over) is refused."""

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from runs.lab.benchmark.collect import RecordedClient, resume_record
from runs.lab.benchmark.metrics import PgStatsSnapshot
from runs.lab.benchmark.results import BenchmarkResult
from runs.lab.benchmark.resume import parse_resume_record, read_resume_record
from runs.lab.benchmark.run import BenchmarkSpec, ClientSpec, run_dir_for, work_dir_for
from runs.lab.errors import LabError
from runs.lab.host.run_user import RUN_USER
from runs.lab.options import InitOptions, RunOptions
from runs.lab.postgres.cluster import Cluster
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.kept import KeptSetup
from runs.lab.storage.prepare import FilesystemSpec, PreparedStorage
from runs.lab.transport.interface import CommandResult
from runs.lab.transport.process import Detached

BIN = "/usr/lib/postgresql/16/bin"
KEY = "run-7-0123456789ab"
OWN_MOUNT = f"/mnt/benchlab/benchlab-{KEY}"
SPEC = BenchmarkSpec(
    device=DeviceIdentity(path="/dev/disk/by-id/ata-HDD_1", wipe_allowed=True, serial="S1"),
    filesystem=FilesystemSpec("ext4"),
    pg_bin_dir=BIN,
    init=InitOptions(scale=1),
    run=RunOptions(clients=2, duration_s=12),
    run_key=KEY,
)
TAKEN_OVER = KeptSetup(
    mountpoint="/mnt/benchlab/benchlab-run-6-ba9876543210", fstype="ext4", device_node="/dev/sdb",
    mount_options="rw,noatime", mkfs_command="mkfs.ext4 -F -q /dev/sdb",
    base_dir="/mnt/benchlab/benchlab-run-6-ba9876543210/postgres", pg_bin_dir=BIN, database="bench", scale=1,
)  # fmt: skip


def record(
    mountpoint: str = OWN_MOUNT, on_server: bool = True, iostat: str | None = "sdb", clients: int = 0
) -> dict[str, Any]:
    """As benchmark.py writes it when the measurement starts (with `clients` client hosts' pgbench)."""
    storage = PreparedStorage(mountpoint, "ext4", "/dev/sdb", "rw,noatime", "mkfs.ext4 -F -q /dev/sdb")
    result = BenchmarkResult(storage=storage, command=f"{BIN}/pgbench -c 2 bench", pg_version="PostgreSQL 16.4")
    cluster = Cluster(bin_dir=BIN, base_dir=f"{mountpoint}/postgres", port=54321)
    process = Detached(run_dir=work_dir_for(run_dir_for(KEY)), name="pgbench", pid=4242, user=RUN_USER)
    before = PgStatsSnapshot(database={"blks_hit": 10}, bgwriter={"checkpoints_timed": 1})
    several = tuple(
        RecordedClient(f"lab{i}", f"bench_{i}", [f"{BIN}/pgbench", f"bench_{i}"], "pgbench 16.4", 0.2, process)
        for i in range(1, clients + 1)
    )
    written = resume_record(KEY, result, cluster, process, on_server, before, iostat, several).as_json()
    return json.loads(json.dumps(written))  # as it comes back from the file


def test_the_record_as_written_is_read_back() -> None:
    written = record()

    read = parse_resume_record(written, SPEC)

    assert read.as_json() == written
    assert read.storage.mountpoint == OWN_MOUNT and read.cluster.port == 54321 and read.pgbench.pid == 4242
    assert read.collectors == ("iostat", "vmstat") and read.pg_stats_before.database == {"blks_hit": 10}


def test_a_kept_setup_the_run_took_over_is_its_storage_only_when_the_service_says_so() -> None:
    written = record(mountpoint=TAKEN_OVER.mountpoint)

    assert parse_resume_record(written, SPEC, TAKEN_OVER).storage.mountpoint == TAKEN_OVER.mountpoint
    with pytest.raises(ValueError, match="is not the run's own /mnt/benchlab/benchlab-run-7-"):
        parse_resume_record(written, SPEC)


def changed(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = data
        for name in parents:
            target = target[name]
        target[last] = value

    return change


def removed(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.pop(name)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (removed("cluster"), "the record lacks cluster"),
        (changed("extra", 1), r"unknown keys \['extra'\]"),
        (changed("version", 1), "version 1 is not 2"),
        (changed("clients", {}), "clients is not a list"),
        (changed("run_key", "run-8-0123456789ab"), "it is the record of 'run-8-"),
        (changed("command", None), "command is not a string"),
        (changed("cluster.bin_dir", "/tmp/evil/bin"), "the cluster's binaries '/tmp/evil/bin' are not the run's"),
        (changed("cluster.port", 22), "port 22 is not one benchlab gives"),
        (changed("cluster.port", True), "port True is not one benchlab gives"),
        (changed("cluster.base_dir", "/etc/postgres"), "the storage: the cluster's directory '/etc/postgres'"),
        (changed("cluster.base_dir", f"{OWN_MOUNT}/other"), "is not the run's /mnt/benchlab/benchlab-run-7-"),
        (changed("storage.mountpoint", "/"), "the storage: '/' is not one of benchlab's mountpoints"),
        (changed("storage.device_node", "/etc/passwd"), "the storage: '/etc/passwd' is not a device node"),
        (changed("storage.fstype", "xfs"), "the storage is xfs, the run's is ext4"),
        (changed("storage.directory", "/srv/benchlab-run-7-0123456789ab"), "the storage: a run directory belongs"),
        (changed("pgbench.run_dir", "/tmp"), "pgbench's directory '/tmp' is not the run's /var/lib/benchlab/runs/"),
        (changed("pgbench.user", "root"), "the process is 'pgbench' of 'root', not pgbench of"),
        (changed("pgbench.name", "iostat"), "the process is 'iostat' of"),
        (changed("pgbench.pid", 1), "pgbench's PID 1 is not a process's"),
        (changed("pgbench.pid", "4242"), "pgbench's PID '4242' is not a process's"),
        (changed("pgbench.host", "client"), "pgbench ran on the 'client', the run's runs on the server"),
        (changed("pg_stats_before.database", []), "the statistics before are not objects"),
        (changed("iostat_device", "../sda"), "'../sda' is not a device's kernel name"),
        (changed("collectors", ["iostat", "vmstat", "sh"]), "the collectors .* are not"),
        (changed("pg_non_default_settings", {"work_mem": 4}), "pg_non_default_settings is not an object of strings"),
    ],
)
def test_anything_that_is_not_the_runs_own_is_refused(change: Callable[[dict[str, Any]], None], message: str) -> None:
    data = record()
    change(data)

    with pytest.raises(ValueError, match=message):
        parse_resume_record(data, SPEC)


def test_a_directory_device_run_directory_must_be_named_after_the_run() -> None:
    spec = dataclasses.replace(SPEC, device=DeviceIdentity(path="/srv/bench"), filesystem=FilesystemSpec("directory"))
    data = record(iostat=None)
    data["storage"] |= {"fstype": "directory", "device_node": None, "mkfs_command": ""}

    data["storage"]["directory"] = f"/srv/bench/benchlab-{KEY}"
    assert parse_resume_record(data, spec).storage.directory == f"/srv/bench/benchlab-{KEY}"
    data["storage"]["directory"] = "/srv/bench/benchlab-run-6-ba9876543210"
    with pytest.raises(ValueError, match="the directory /srv/bench/benchlab-run-6-ba9876543210 is not the run's own"):
        parse_resume_record(data, spec)


def test_pgbench_on_a_client_host_is_recorded_so() -> None:
    spec = dataclasses.replace(
        SPEC, clients=(ClientSpec(pg_bin_dir=BIN, address="10.0.0.2", server_address="10.0.0.1"),)
    )

    assert parse_resume_record(record(on_server=False), spec).pgbench_on == "client"
    with pytest.raises(ValueError, match="pgbench ran on the 'server', the run's runs on the client"):
        parse_resume_record(record(), spec)


class Host:
    """A host that has some of the run's files."""

    label = "lab1"

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def run(self, argv: list[str], check: bool = True) -> CommandResult:
        path = argv[-1]
        there = path in self.files or any(name.startswith(f"{path}/") for name in self.files)
        return CommandResult(" ".join(argv), 0 if there else 1, self.files.get(path, ""), "")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, f"the run's files are gone from lab1: {run_dir_for(KEY)} is not there"),
        ({f"{run_dir_for(KEY)}/vmstat.pid": "1"}, "the run's record of its measurement is gone from lab1"),
        ({f"{run_dir_for(KEY)}/resume.json": "{"}, "resume.json on lab1 is refused: Expecting property name"),
    ],
)
def test_a_record_that_is_not_on_the_host_or_not_json_is_a_lab_error(files: dict[str, str], message: str) -> None:
    with pytest.raises(LabError, match=message):
        read_resume_record(Host(files), SPEC)  # type: ignore[arg-type]


def test_the_record_is_read_from_the_runs_directory() -> None:
    host = Host({f"{run_dir_for(KEY)}/resume.json": json.dumps(record())})

    assert read_resume_record(host, SPEC).pgbench.pid == 4242  # type: ignore[arg-type]


TWO_CLIENTS = dataclasses.replace(
    SPEC,
    clients=tuple(
        ClientSpec(BIN, address=f"10.0.0.{i}", server_address="10.0.0.1", name=f"lab{i}", database=f"bench_{i}")
        for i in (1, 2)
    ),
)


def test_several_client_hosts_pgbench_are_each_recorded() -> None:
    written = record(on_server=False, clients=2)

    read = parse_resume_record(written, TWO_CLIENTS)

    assert read.as_json() == written
    assert [(c.name, c.database, c.command[-1], c.rtt_ms) for c in read.clients] == [
        ("lab1", "bench_1", "bench_1", 0.2),
        ("lab2", "bench_2", "bench_2", 0.2),
    ]
    assert read.clients[1].process.pid == 4242 and read.clients[1].process.user == RUN_USER


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda data: data["clients"].pop(), "the record names 1 client hosts' pgbench, the run has 2"),
        (lambda data: data["clients"].__setitem__(1, {}), "a client host's pgbench lacks"),
        (lambda data: data["clients"][1].update(name="lab9"), "the client 'lab9' on 'bench_2' is not the run's lab2"),
        (lambda data: data["clients"][0].update(database="postgres"), "on 'postgres' is not the run's lab1"),
        (lambda data: data["clients"][0].update(command="rm -rf /"), "lab1's command is not a list of strings"),
        (lambda data: data["clients"][0].update(rtt_ms="fast"), "lab1's rtt_ms 'fast' is not a number"),
        (lambda data: data["clients"][0]["pgbench"].update(run_dir="/tmp"), "pgbench's directory '/tmp' is not"),
        (lambda data: data["clients"][0]["pgbench"].update(user="root"), "not pgbench of"),
    ],
)
def test_a_client_hosts_pgbench_that_is_not_the_runs_own_is_refused(
    change: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = record(on_server=False, clients=2)
    change(data)

    with pytest.raises(ValueError, match=message):
        parse_resume_record(data, TWO_CLIENTS)
