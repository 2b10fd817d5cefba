"""What a benchmark is asked to do, and who hears how it goes: the lab layer's vocabulary for
one run (benchmark.py runs it, resume.py finishes it, clients.py and measure.py measure it).

A run's directory on every host it uses is RUNS_ROOT/<run key>: root's (iostat, vmstat, the
custom script, the resume record), with a work dir for the unprivileged user inside it
(pgbench's output and logs)."""

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from runs.lab.benchmark.checkpoints import CheckpointEvent
from runs.lab.benchmark.results import BenchmarkResult
from runs.lab.options import InitOptions, RunOptions, StateBefore
from runs.lab.parse.pgbench import ProgressSample
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.prepare import FilesystemSpec
from runs.lab.sysbench.options import SysbenchOptions
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached

log = logging.getLogger(__name__)
RUNS_ROOT = "/var/lib/benchlab/runs"  # on the host's own disk, not on the device under test
WORK_SUBDIR = "bench"  # run_dir/bench: the unprivileged user's (run_user.py)


class Step:
    PREPARING_STORAGE = "preparing storage"
    INITIALIZING_DATABASE = "initializing database"
    WARMING_UP = "warming up"  # the separate warm-up run (warmup.py)
    MEASURING = "measuring"
    COLLECTING = "collecting"
    CLEANING_UP = "cleaning up"


@dataclass(frozen=True)
class ClientSpec:
    """pgbench on another host, reaching the server over TCP."""

    pg_bin_dir: str  # the client's own pgbench
    address: str  # the client as the server sees it: trusted in pg_hba
    server_address: str  # the server as the client reaches it
    name: str = "client"  # as the inventory names the host: said in the log and in failures
    database: str = "bench"  # the database on the server it runs against


@dataclass(frozen=True)
class Endpoint:
    """A host benchlab talks to, and how to open a fresh connection to it (for reconnects)."""

    transport: Transport
    connect: Callable[[], Transport]


@dataclass(frozen=True)
class BenchmarkSpec:
    device: DeviceIdentity
    filesystem: FilesystemSpec
    pg_bin_dir: str
    init: InitOptions
    run: RunOptions
    run_key: str  # unique per run: names the mountpoint and the run directory
    pg_settings: Mapping[str, str] = field(default_factory=dict)
    database: str = "bench"
    clients: tuple[ClientSpec, ...] = ()  # none: pgbench runs on the server
    warmup_s: int = 0  # the first seconds of run.duration_s, left out of the latency percentiles
    warmup_run_s: int = 0  # a separate pgbench before the measurement (warmup.py); 0: none
    warmup_run_clients: int | None = None  # its clients; None: run.clients
    unreachable_limit_s: float = 300.0  # how long a host that stopped answering is waited for
    state: StateBefore = field(default_factory=StateBefore)  # between loading and measuring (state.py)
    driver: str = "pgbench"  # what loads and measures: a name in drivers.py's DRIVERS
    sysbench: SysbenchOptions | None = None  # the sysbench driver's options (init and run are pgbench's)

    @property
    def databases(self) -> list[str]:
        """The databases to load, in order: the clients' (each its own, or one shared), or the one."""
        return list(dict.fromkeys(client.database for client in self.clients)) or [self.database]


class Observer(Protocol):
    def step(self, name: str) -> None: ...

    def line(self, stream: str, text: str) -> None: ...

    def progress(self, sample: ProgressSample) -> None: ...

    def started(self, process: Detached, on: str | None = None) -> None:
        """A detached command runs now (a cancel stops it), on the client host named `on` or the server."""
        ...

    def client_progress(self, name: str, sample: ProgressSample) -> None:
        """A second of one client host's pgbench, in a run with several (progress() gets their total)."""
        ...

    def followed(self, offset: int) -> None:
        """pgbench's progress output has been handed over (line, progress) up to byte `offset`."""
        ...

    def formatting(self, command: str) -> None:
        """mkfs is about to run (every safety check has passed)."""
        ...

    def checkpoint(self, event: CheckpointEvent) -> None:
        """The server logged a checkpoint's start or end while pgbench runs (from another thread)."""
        ...

    def collected(self, result: "BenchmarkResult") -> None:
        """The measurement's results are in hand and nothing is cleaned up yet: keep them now.
        (A process that dies while cleaning up then loses nothing of what was measured.)"""
        ...


class SilentObserver:
    def step(self, name: str) -> None:
        log.info("step: %s", name)

    def line(self, stream: str, text: str) -> None:
        pass

    def progress(self, sample: ProgressSample) -> None:
        pass

    def started(self, process: Detached, on: str | None = None) -> None:
        pass

    def client_progress(self, name: str, sample: ProgressSample) -> None:
        pass

    def followed(self, offset: int) -> None:
        pass

    def formatting(self, command: str) -> None:
        log.info("formatting: %s", command)

    def checkpoint(self, event: CheckpointEvent) -> None:
        pass

    def collected(self, result: "BenchmarkResult") -> None:
        pass


def run_dir_for(run_key: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]+", run_key):
        raise ValueError(f"bad run key {run_key!r}")
    return f"{RUNS_ROOT}/{run_key}"


def work_dir_for(run_dir: str) -> str:
    """The unprivileged user's part of a run directory: pgbench's output and logs."""
    return f"{run_dir}/{WORK_SUBDIR}"


@dataclass(frozen=True)
class Bench:
    """Where one pgbench runs: a client host, or the server itself (client None)."""

    name: str | None  # the client host's name; None: the server
    endpoint: Endpoint
    client: ClientSpec | None
