"""Two client hosts drive one server at once (seed 000's setup), on the virtual lab: lab2 and
lab3 run pgbench against lab1's RAM disk, each against its own database or both against one."""

import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack, closing
from typing import Any

import pytest

from runs.lab.benchmark.run import BenchmarkResult, BenchmarkSpec, ClientSpec, Endpoint, SilentObserver, run_benchmark
from runs.lab.parse.pgbench import ProgressSample
from runs.lab.pgbench.commands import InitOptions, RunOptions
from runs.lab.storage.mounts import MOUNT_ROOT
from runs.lab.storage.prepare import FilesystemSpec
from runs.lab.transport.process import Detached
from runs.lab.transport.ssh import SSHTransport
from runs.tests.virtual_lab import PG_BIN, VirtualLab

pytestmark = pytest.mark.lab
CLIENTS = ("lab2", "lab3")


class Recorder(SilentObserver):
    """What the lab layer told: each client's seconds, the totals, and the pg_hba the server had
    once pgbench ran; it can kill one client's pgbench once it has started."""

    def __init__(self, lab: VirtualLab, kill_on: str | None = None) -> None:
        self.lab, self.kill_on = lab, kill_on
        self.totals: list[ProgressSample] = []
        self.per_client: dict[str, list[ProgressSample]] = {name: [] for name in CLIENTS}
        self.started_on: list[str | None] = []

    def progress(self, sample: ProgressSample) -> None:
        self.totals.append(sample)

    def client_progress(self, name: str, sample: ProgressSample) -> None:
        self.per_client[name].append(sample)
        if name == self.kill_on and len(self.per_client[name]) == 2:
            with ExitStack() as stack:
                host = stack.enter_context(closing(self.lab.connect(name)))
                pid = host.run(["cat", self.pids[name]]).stdout.strip()
                host.run(["pkill", "-KILL", "-P", pid])  # pgbench itself, the wrapper's only child

    def started(self, process: Detached, on: str | None = None) -> None:
        self.started_on.append(on)
        if process.name == "pgbench" and on is not None:
            self.pids = getattr(self, "pids", {}) | {on: process.path("pid")}


@pytest.fixture
def hosts(virtual_lab: VirtualLab) -> Iterator[dict[str, SSHTransport]]:
    with ExitStack() as stack:
        yield {name: stack.enter_context(closing(virtual_lab.connect(name))) for name in ("lab1", *CLIENTS)}


def two_client_spec(lab: VirtualLab, run_key: str, shared: bool = False, **run: Any) -> BenchmarkSpec:
    server = lab.host("lab1")["address"]
    clients = tuple(
        ClientSpec(
            PG_BIN,
            address=lab.host(name)["address"],
            server_address=server,
            name=name,
            database="bench" if shared else f"bench_{i}",
        )
        for i, name in enumerate(CLIENTS, start=1)
    )
    options = RunOptions(clients=2, threads=1, duration_s=5, log_sampling_rate=1.0)
    return BenchmarkSpec(
        device=lab.disk("lab1", "ram"),
        filesystem=FilesystemSpec("ext4"),
        pg_bin_dir=PG_BIN,
        init=InitOptions(scale=1),
        run=dataclasses.replace(options, **run),
        run_key=run_key,
        clients=clients,
    )


def run_two(
    lab: VirtualLab, hosts: dict[str, SSHTransport], spec: BenchmarkSpec, observer: Recorder
) -> BenchmarkResult:
    endpoints = [Endpoint(hosts[name], lambda name=name: lab.connect(name)) for name in CLIENTS]  # type: ignore[misc]
    return run_benchmark(hosts["lab1"], lambda: lab.connect("lab1"), spec, observer, clients=endpoints)


def test_two_client_hosts_measure_together_each_on_its_own_database(
    virtual_lab: VirtualLab, hosts: dict[str, SSHTransport]
) -> None:
    recorder = Recorder(virtual_lab)
    result = run_two(virtual_lab, hosts, two_client_spec(virtual_lab, "multi-own"), recorder)

    assert result.exit_status == 0, [c.stderr for c in result.clients]
    lab2, lab3 = result.clients
    assert (lab2.name, lab2.database, lab3.name, lab3.database) == ("lab2", "bench_1", "lab3", "bench_2")
    assert lab2.command.endswith(" bench_1") and lab3.command.endswith(" bench_2")
    assert "bench_1" in result.init_command and "bench_2" in result.init_command  # both loaded
    # The barrier: neither client started before both databases were loaded, and they started together.
    assert result.loaded_epoch is not None
    assert all(c.started_epoch is not None and c.started_epoch >= result.loaded_epoch for c in result.clients)
    assert result.start_skew_ms is not None and 0 <= result.start_skew_ms < 500
    assert result.start_skew_ms == pytest.approx(abs(lab2.started_epoch - lab3.started_epoch) * 1000)  # type: ignore[operator]
    # Each client's own results, and the run's total of them.
    assert lab2.summary and lab3.summary and result.summary
    assert lab2.summary.tps and lab3.summary.tps and lab2.summary.tps > 0 and lab3.summary.tps > 0
    assert result.summary.tps == pytest.approx(lab2.summary.tps + lab3.summary.tps)
    assert result.summary.clients == 4
    assert lab2.latency and lab3.latency and result.latency
    assert result.latency.count == lab2.latency.count + lab3.latency.count > 0
    low, high = sorted([lab2.latency.p50_ms or 0, lab3.latency.p50_ms or 0])
    assert low * 0.999 <= (result.latency.p50_ms or 0) <= high  # a merged median lies between the two
    # Round trips over the lab's bridge: measured, and well under a millisecond or so.
    assert all(c.rtt_ms is not None and 0 < c.rtt_ms < 50 for c in result.clients)
    # Live: every second of both clients, and a total per second that is their sum.
    assert len(recorder.per_client["lab2"]) >= 4 and len(recorder.per_client["lab3"]) >= 4
    assert len(recorder.totals) >= 4
    by_second = {name: {round(s.elapsed_s): s.tps for s in samples} for name, samples in recorder.per_client.items()}
    for total in recorder.totals[:4]:
        second = round(total.elapsed_s)
        assert total.tps == pytest.approx(by_second["lab2"][second] + by_second["lab3"][second])
    assert recorder.started_on.count("lab2") == 1 and recorder.started_on.count("lab3") == 1
    # What else each client host did around the window; its pgbench (the run user's) is not among "others".
    during = result.method.as_environment()["during_clients"]
    assert set(during) == {"lab2", "lab3"}, during
    for name, host in during.items():
        assert host["load_1m_start"] is not None and host["load_1m_end"] is not None and host["cpu_count"], name
        assert isinstance(host["busiest"], list) and "pgbench" not in {p["command"] for p in host["busiest"]}, host


def test_two_client_hosts_may_share_one_database_and_the_server_trusts_exactly_them(
    virtual_lab: VirtualLab, hosts: dict[str, SSHTransport]
) -> None:
    spec = two_client_spec(virtual_lab, "multi-shared", shared=True, duration_s=3, log_sampling_rate=None)
    checked: dict[str, Any] = {}

    class HbaReader(Recorder):
        def started(self, process: Detached, on: str | None = None) -> None:
            super().started(process, on)
            if process.name == "pgbench" and on == "lab3":
                data = f"{MOUNT_ROOT}/*multi-shared*/postgres/pgdata"
                found = hosts["lab1"].run(["sh", "-c", f"cat {data}/pg_hba.conf {data}/benchlab.conf"], check=False)
                checked["hba"] = found.stdout

    result = run_two(virtual_lab, hosts, spec, HbaReader(virtual_lab))

    assert result.exit_status == 0, [c.stderr for c in result.clients]
    assert [c.database for c in result.clients] == ["bench", "bench"]
    assert result.init_command.count("pgbench -i") == 1  # one database, loaded once
    assert all(c.command.endswith(" bench") for c in result.clients)
    addresses = [virtual_lab.host(name)["address"] for name in CLIENTS]
    trusted = [line for line in checked.get("hba", "").splitlines() if line.startswith("host all bench ")]
    assert len(trusted) == 2 and all(any(a in line for line in trusted) for a in addresses), checked
    server = virtual_lab.host("lab1")["address"]
    assert f"listen_addresses = '{server}'" in checked["hba"]  # the address the clients use, not '*'
    assert result.aggregate and result.summary and result.summary.tps


def test_a_client_whose_pgbench_dies_fails_the_run_naming_it_and_stops_the_other(
    virtual_lab: VirtualLab, hosts: dict[str, SSHTransport]
) -> None:
    spec = two_client_spec(virtual_lab, "multi-fail", duration_s=30)
    recorder = Recorder(virtual_lab, kill_on="lab3")
    result = run_two(virtual_lab, hosts, spec, recorder)

    assert result.exit_status not in (0, None)
    assert result.failed_client == "lab3" and result.failure.startswith("pgbench on lab3 failed")
    lab2 = result.clients[0]
    # lab2 was stopped (SIGINT: it prints what it measured) long before its 30 s were up.
    assert lab2.summary is not None and (lab2.summary.duration_s or 30) <= 30
    assert len(recorder.totals) < 20
