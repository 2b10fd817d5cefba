"""pgbench on several client hosts at once against one server: started together, followed
together, collected one by one.

The barrier: every client's pgbench is started only once every database is loaded (the caller
loads them first), from one thread per client released at the same instant, so the starts are
apart by little more than the spread of one SSH round trip. Each start's own time (the epoch
its wrapper wrote, start_detached) is read back: their spread is the run's start skew. Clocks
of different hosts are compared as they are (NTP keeps lab hosts within a millisecond or so).

Following: a thread per client reads its pgbench's output (follow.py) and hands every line to
this thread through a queue, so the observer (which writes to benchlab's database) is only
ever called from the caller's thread. A client whose pgbench fails stops the others: the run
fails, naming it.
"""

import queue
import shlex
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runs.lab.benchmark.results import BenchmarkResult, ClientResult
from runs.lab.errors import LabError
from runs.lab.host.run_user import RUN_USER, read_as_run_user, run_as_run_user
from runs.lab.options import RunOptions
from runs.lab.parse.pgbench import ProgressSample, parse_progress_line
from runs.lab.parse.pgbench_logs import merge_aggregate_intervals, parse_aggregate_log
from runs.lab.parse.pgbench_summary import parse_summary
from runs.lab.pgbench.client_totals import ProgressTotals, total_summary
from runs.lab.pgbench.commands import LOG_PREFIX
from runs.lab.pgbench.follow import Follower
from runs.lab.pgbench.latency import (
    merged_percentiles,
    transaction_latency_histogram,
    transaction_latency_percentiles,
)
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached, cancel, start_detached, wait_for_exit

if TYPE_CHECKING:  # benchmark.py imports this module
    from runs.lab.benchmark.spec import Endpoint, Observer

RTT_PROBES = 10
_ALL_LOGS = ["sh", "-c", f'cat "$1"/{LOG_PREFIX}.*', "sh"]


@dataclass(frozen=True)
class ClientBench:
    """A client host ready to measure: how to reach it, and its pgbench command."""

    name: str
    endpoint: "Endpoint"
    command: list[str]
    result: ClientResult

    @property
    def command_text(self) -> str:
        return shlex.join(self.command)


def client_hosts(measuring: Sequence[ClientBench]) -> list[tuple[str, Transport]]:
    """The client hosts pgbench runs on, by name (a bench with no name is the server itself)."""
    return [(bench.name, bench.endpoint.transport) for bench in measuring if bench.name]


class ClientFailed(LabError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"pgbench on {name} {message}")
        self.client = name


# A TCP connect is one round trip (SYN, SYN-ACK): timed from the client, ten times, the median.
_RTT_SCRIPT = """
import socket, statistics, sys, time
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
times = []
for _ in range(count):
    start = time.perf_counter()
    with socket.create_connection((host, port), timeout=5):
        times.append((time.perf_counter() - start) * 1000)
print(statistics.median(times))
"""


def measure_rtt(transport: Transport, server_address: str, port: int) -> float | None:
    """The client's round trip to the server in ms (median TCP connect time to PostgreSQL's
    port); None when it could not be measured (no python3 on the host, no answer)."""
    argv = ["python3", "-c", _RTT_SCRIPT, server_address, str(port), str(RTT_PROBES)]
    found = transport.run(argv, check=False, timeout=60)
    try:
        return float(found.stdout.strip()) if found.exit_status == 0 else None
    except ValueError:
        return None


def start_together(benches: Sequence[ClientBench], work_dir: str) -> list[Detached]:
    """Every client's pgbench started at the same instant (a thread each, one barrier); if
    any cannot start, those that did are stopped and the run fails naming it."""
    barrier = threading.Barrier(len(benches))
    started: list[Detached | None] = [None] * len(benches)
    errors: list[tuple[str, Exception]] = []

    def start(index: int, bench: ClientBench) -> None:
        try:
            barrier.wait(timeout=60)
            started[index] = start_detached(bench.endpoint.transport, bench.command, work_dir, "pgbench", user=RUN_USER)
        except Exception as exc:  # noqa: BLE001 - said below, with the client's name
            errors.append((bench.name, exc))

    threads = [threading.Thread(target=start, args=(i, b), name=f"start-{b.name}") for i, b in enumerate(benches)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        for bench, process in zip(benches, started, strict=True):
            if process is not None:
                cancel(bench.endpoint.transport, process, 2.0)
        name, exc = errors[0]
        raise ClientFailed(name, f"could not start: {exc}")
    return [process for process in started if process is not None]


def started_epoch(transport: Transport, process: Detached) -> float | None:
    """When the detached command started, by its host's clock (start_detached writes it)."""
    text = read_as_run_user(transport, process.path("started"), check=False).strip()
    try:
        return float(text)
    except ValueError:
        return None


def start_skew_ms(benches: Sequence[ClientBench], processes: Sequence[Detached]) -> float | None:
    """The spread of the clients' start times (each read from the client that started)."""
    for bench, process in zip(benches, processes, strict=True):
        bench.result.started_epoch = started_epoch(bench.endpoint.transport, process)
    epochs = [bench.result.started_epoch for bench in benches]
    known = [epoch for epoch in epochs if epoch is not None]
    if len(known) < len(epochs):
        return None
    return (max(known) - min(known)) * 1000


@dataclass(frozen=True)
class _Event:
    client: int
    line: str | None  # None: that client's follower has ended
    error: Exception | None = None


def follow_together(
    benches: Sequence[ClientBench],
    processes: Sequence[Detached],
    observer: "Observer",
    on_total: Callable[[ProgressSample], None],
    timeout_s: float,
    max_reconnect_s: float,
) -> None:
    """Follow every client's pgbench to its end; each progress line goes to its client and
    to the total (on_total, once every running client has reported that second). The first
    client that fails or cannot be followed stops the others; ClientFailed then names it."""
    events: queue.Queue[_Event] = queue.Queue()

    def follow(index: int, bench: ClientBench, process: Detached) -> None:
        try:

            def hand_over(text: str) -> None:
                events.put(_Event(index, text))

            follower = Follower(bench.endpoint.connect, process, "stderr", hand_over, max_reconnect_s=max_reconnect_s)
            follower.follow(timeout_s)
            events.put(_Event(index, None))
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
            events.put(_Event(index, None, exc))

    threads = [
        threading.Thread(target=follow, args=(i, b, p), name=f"follow-{b.name}", daemon=True)
        for i, (b, p) in enumerate(zip(benches, processes, strict=True))
    ]
    for thread in threads:
        thread.start()
    totals = ProgressTotals(clients=len(benches))
    failed: ClientFailed | None = None
    running = len(threads)
    while running:
        event = events.get()
        bench = benches[event.client]
        if event.line is not None:
            _client_line(bench, event.line, observer, totals, event.client, on_total)
            continue
        running -= 1
        for total in totals.end(event.client):
            on_total(total)
        problem = _ended_badly(bench, processes[event.client], event.error)
        if problem is not None and failed is None:
            failed = problem
            _stop_others(benches, processes, event.client)
    for thread in threads:
        thread.join(timeout=10)
    if failed is not None:
        raise failed


def _client_line(
    bench: ClientBench,
    text: str,
    observer: "Observer",
    totals: ProgressTotals,
    index: int,
    on_total: Callable[[ProgressSample], None],
) -> None:
    observer.line(f"pgbench@{bench.name}", text)
    sample = parse_progress_line(text)
    if sample is None:
        return
    observer.client_progress(bench.name, sample)
    for total in totals.add(index, sample):
        on_total(total)


def _ended_badly(bench: ClientBench, process: Detached, error: Exception | None) -> ClientFailed | None:
    if error is not None:
        return ClientFailed(bench.name, f"could not be followed: {error}")
    status = wait_for_exit(bench.endpoint.transport, process, 60)  # it has exited: the status is on its way
    bench.result.exit_status = status
    return None if status == 0 else ClientFailed(bench.name, f"failed (exit status {status})")


def _stop_others(benches: Sequence[ClientBench], processes: Sequence[Detached], failed: int) -> None:
    for index, (bench, process) in enumerate(zip(benches, processes, strict=True)):
        if index != failed:
            cancel(bench.endpoint.transport, process, 2.0)


def collect_client(bench: ClientBench, process: Detached, options: RunOptions, warmup_s: int) -> None:
    """One client's outputs once its pgbench has exited: summary, and its latency percentiles
    and histogram when it logged each transaction."""
    result, transport = bench.result, bench.endpoint.transport
    if result.exit_status is None:
        result.exit_status = wait_for_exit(transport, process, 60)
    result.stdout = read_as_run_user(transport, process.path("stdout"))
    result.stderr = read_as_run_user(transport, process.path("stderr"))
    result.summary = parse_summary(result.stdout, result.stderr)
    if options.log_sampling_rate is not None:
        started = process.path("started")
        result.latency = transaction_latency_percentiles(
            transport, process.run_dir, started, warmup_s, options.log_sampling_rate
        )
        result.histogram = transaction_latency_histogram(transport, process.run_dir, started, warmup_s)


def client_pgbench_version(transport: Transport, bin_dir: str) -> str:
    return run_as_run_user(transport, [f"{bin_dir}/pgbench", "--version"]).stdout.strip()


def joined_commands(benches: Sequence[ClientBench]) -> str:
    """The run's command line(s), one per client host, as the run page shows them."""
    return "\n".join(f"{bench.name}: {shlex.join(bench.command)}" for bench in benches)


def collect_several(
    result: "BenchmarkResult",
    benches: Sequence[ClientBench],
    processes: Sequence[Detached],
    options: RunOptions,
    warmup_s: int,
) -> None:
    """Every client's outputs, and the run's totals from them: summed throughput and counts,
    latency percentiles over all clients' transactions together, per-second aggregates of all
    their logs (by the epoch each interval started, so the clients' seconds line up)."""
    for bench, process in zip(benches, processes, strict=True):
        collect_client(bench, process, options, warmup_s)
    clients = [bench.result for bench in benches]
    summaries = [client.summary for client in clients if client.summary is not None]
    result.summary = total_summary(summaries) if len(summaries) == len(clients) else None
    histograms = [client.histogram for client in clients if client.histogram is not None]
    if options.log_sampling_rate is not None and len(histograms) == len(clients):
        result.latency = merged_percentiles(histograms, options.log_sampling_rate)
    if options.log_sampling_rate is None:
        logs = "".join(
            run_as_run_user(bench.endpoint.transport, [*_ALL_LOGS, process.run_dir], check=False).stdout
            for bench, process in zip(benches, processes, strict=True)
        )
        result.aggregate = merge_aggregate_intervals(parse_aggregate_log(logs))
