"""CPU time of the processes around one measurement, read from this machine's /proc.

A virtual lab host is a PID namespace on this machine, so everything it runs (pgbench,
PostgreSQL, sshd and what benchlab starts there: tail, iostat, vmstat, the shells of its
commands) is visible here, beside benchlab's own worker, its database's backends and Redis.
`CpuWatch` samples them twice a second from a thread while a side of the benchmark runs; the
window is the measured pgbench's life (first to last sample that saw it, `pgbench -i` aside).

Processes that live through a sample are counted by their own CPU time. Short-lived ones (a
`cat` over SSH, a shell) are not seen, but their time is: once reaped it is in their parent's
cutime/cstime, so a namespace's whole CPU time is the sum over its live processes of their own
plus their reaped children's. What the lab host spent beyond the processes seen is "other".
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runs.jobs.background import BackgroundWatch

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
LAB_GROUPS = ("pgbench", "postgres", "sshd", "tail", "iostat", "vmstat")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    comm: str
    state: str
    ppid: int
    own_ticks: int  # utime + stime
    reaped_ticks: int  # cutime + cstime: its children that have exited and been waited for
    started: int  # start time, in ticks since boot: with the PID, which process it is


def parse_stat(text: str) -> ProcStat:
    """One /proc/<pid>/stat line (the command name may hold spaces and parentheses)."""
    head, _, rest = text.rpartition(")")
    pid, _, comm = head.partition(" (")
    fields = rest.split()  # fields[0] is field 3 (state); field n is fields[n - 3]
    return ProcStat(
        pid=int(pid),
        comm=comm,
        state=fields[0],
        ppid=int(fields[1]),
        own_ticks=int(fields[11]) + int(fields[12]),
        reaped_ticks=int(fields[13]) + int(fields[14]),
        started=int(fields[19]),
    )


def machine_ticks(text: str) -> tuple[int, int]:
    """Busy and total ticks of all CPUs from /proc/stat's first line (idle and iowait are not busy)."""
    values = [int(v) for v in text.splitlines()[0].split()[1:]]
    total = sum(values[:8])  # guest time is already in user and nice
    return total - values[3] - values[4], total


def _is_initializing(argv: list[str]) -> bool:
    return "-i" in argv or "--initialize" in argv


def _is_measured(argv: list[str]) -> bool:
    """A pgbench that measures: not `pgbench -i`, nor `pgbench --version` (benchlab asks it first)."""
    return not _is_initializing(argv) and not {"-V", "--version"} & set(argv)


# /proc/diskstats columns (0-based, after major, minor and name: 3 is reads completed).
DISK_COUNTERS = {"reads": 3, "read KiB": 5, "writes": 7, "written KiB": 9, "flushes": 17}


def disk_counters(diskstats: str, device: str) -> tuple[int, ...]:
    """The device's DISK_COUNTERS from /proc/diskstats (sectors counted as KiB: halved)."""
    for line in diskstats.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[2] == device:
            values = [int(fields[i]) if i < len(fields) else 0 for i in DISK_COUNTERS.values()]
            return tuple(v // 2 if name.endswith("KiB") else v for v, name in zip(values, DISK_COUNTERS, strict=True))
    return ()


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:  # gone meanwhile
        return None


@dataclass
class Sample:
    at: float  # time.monotonic()
    own: dict[tuple[int, int], tuple[str, int]]  # (pid, started): (group, own ticks)
    lab_total: int  # the lab host's namespace: own + reaped over its live processes
    worker_total: int  # the worker's process tree, likewise
    machine_busy: int
    machine_total: int
    measuring: bool
    disk: tuple[int, ...] = ()  # the watched device's counters (DISK_COUNTERS), if any


@dataclass
class Window:
    """CPU use over the measured pgbench's life, in % of one core, by group."""

    seconds: float
    samples: int = 0  # that saw the measured pgbench
    cpu_pct: dict[str, float] = field(default_factory=dict)
    machine_busy_pct: float = 0.0  # of all CPUs
    elsewhere_pct: dict[str, float] = field(default_factory=dict)  # the busiest of the rest, by command
    disk_per_s: dict[str, float] = field(default_factory=dict)  # the watched device's I/O


class CpuWatch(BackgroundWatch):
    """Samples the lab host's namespace (the PID namespace of `namespace_pid`'s children),
    the worker's process tree, benchlab's database backends (processes named `postgres` whose
    title holds `database`, but not `own_backend`) and redis-server, while the block runs."""

    def __init__(
        self,
        namespace_pid: int,
        worker_pid: int | None,
        database: str,
        own_backend: int | None = None,
        every_s: float = 0.5,
        is_measured: Callable[[list[str]], bool] | None = None,
        device: str | None = None,
    ) -> None:
        self.namespace = os.readlink(f"/proc/{namespace_pid}/ns/pid_for_children")
        self.worker_pid, self.database, self.own_backend = worker_pid, database, own_backend
        self.every_s, self.device = every_s, device
        self.is_measured = is_measured or _is_measured
        self._namespaces: dict[tuple[int, int], str] = {}
        self._argvs: dict[tuple[int, int], list[str]] = {}
        self._titles: dict[tuple[int, int], str] = {}
        super().__init__(name="cpu-watch")
        self.start: Sample | None = None
        self.end: Sample | None = None
        self._last_own: dict[tuple[int, int], tuple[str, int]] = {}
        self._done = False
        self.samples = self.measuring_samples = 0
        # Start times (ticks since boot) of the latest `pgbench -i` and of the measured pgbench:
        # how long after the load the measurement began, by the same clock on both sides.
        self.init_started: int | None = None
        self.measured_started: int | None = None
        self.error: BaseException | None = None

    def _watch(self) -> None:
        try:
            while True:
                sample = self.sample()
                self.samples += 1
                if sample.measuring and not self._done:
                    self.measuring_samples += 1
                    self.start = self.start or sample
                    self.end = sample
                    self._last_own.update(sample.own)
                elif self.start is not None:
                    self._done = True  # the measured pgbench has exited
                if self._stop.wait(self.every_s):
                    return
        except BaseException as exc:  # noqa: BLE001 - reported by window()
            self.error = exc

    def _namespace_of(self, key: tuple[int, int]) -> str:
        if key not in self._namespaces:
            try:
                self._namespaces[key] = os.readlink(f"/proc/{key[0]}/ns/pid")
            except OSError:
                self._namespaces[key] = ""
        return self._namespaces[key]

    def _title(self, key: tuple[int, int]) -> str:
        if key not in self._titles:
            self._titles[key] = (_read(f"/proc/{key[0]}/cmdline") or "").replace("\0", " ")
        return self._titles[key]

    def _argv(self, key: tuple[int, int]) -> list[str]:
        if key not in self._argvs:
            self._argvs[key] = (_read(f"/proc/{key[0]}/cmdline") or "").split("\0")
        return self._argvs[key]

    def _measuring(self, key: tuple[int, int]) -> bool:
        return self.is_measured(self._argv(key))

    def _initializing(self, key: tuple[int, int]) -> bool:
        return _is_initializing(self._argv(key))

    def gap_s(self, init_seconds: float | None) -> float | None:
        """From the end of the latest `pgbench -i` (its start plus the `init_seconds` it said it
        took) to the measured pgbench's start."""
        if self.init_started is None or self.measured_started is None or init_seconds is None:
            return None
        return (self.measured_started - self.init_started) / CLOCK_TICKS - init_seconds

    def sample(self) -> Sample:
        stats: dict[int, ProcStat] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and (text := _read(f"/proc/{entry.name}/stat")):
                stat = parse_stat(text)
                stats[stat.pid] = stat
        busy, total = machine_ticks(Path("/proc/stat").read_text())
        worker_tree = self._tree(stats)
        own: dict[tuple[int, int], tuple[str, int]] = {}
        lab_total = worker_total = 0
        measuring = False
        for stat in stats.values():
            key = (stat.pid, stat.started)
            group: str | None = None
            if stat.pid in worker_tree:
                worker_total += stat.own_ticks + stat.reaped_ticks
                group = "worker"
            elif self._namespace_of(key) == self.namespace:
                lab_total += stat.own_ticks + stat.reaped_ticks
                name = stat.comm if stat.comm in LAB_GROUPS else None
                if name == "pgbench" and stat.state != "Z" and self._measuring(key):
                    measuring = True
                    if not self._done:
                        self.measured_started = self.measured_started or stat.started
                elif name == "pgbench":
                    name = "pgbench -i"
                    if self._initializing(key):
                        self.init_started = stat.started
                group = f"lab {name}" if name else None
            elif stat.comm == "postgres" and stat.pid != self.own_backend and f" {self.database} " in self._title(key):
                group = "benchlab database"
            elif stat.comm == "redis-server":
                group = "redis (shared)"
            elif stat.pid == os.getpid():
                group = "this benchmark"
            else:  # what else competes for the cores: by command, the kernel's threads together
                group = "elsewhere " + ("kernel threads" if 2 in (stat.pid, stat.ppid) else stat.comm)
            if group is not None:  # the lab host's other processes count in "lab other"
                own[key] = (group, stat.own_ticks)
        disk = disk_counters(Path("/proc/diskstats").read_text(), self.device) if self.device else ()
        return Sample(time.monotonic(), own, lab_total, worker_total, busy, total, measuring, disk)

    def _tree(self, stats: dict[int, ProcStat]) -> set[int]:
        if self.worker_pid is None or self.worker_pid not in stats:
            return set()
        children: dict[int, list[int]] = {}
        for stat in stats.values():
            children.setdefault(stat.ppid, []).append(stat.pid)
        tree, todo = set(), [self.worker_pid]
        while todo:
            pid = todo.pop()
            tree.add(pid)
            todo += children.get(pid, [])
        return tree

    def window(self) -> Window:
        """CPU use between the first and the last sample that saw the measured pgbench."""
        if self.error is not None:
            raise RuntimeError(f"the CPU watch failed: {self.error!r}") from self.error
        start, end = self.start, self.end
        if start is None or end is None or end.at <= start.at:
            return Window(seconds=0.0, samples=self.measuring_samples)
        window = window_between(start, end, self._last_own)
        window.samples = self.measuring_samples
        return window


def window_between(start: Sample, end: Sample, last_own: dict[tuple[int, int], tuple[str, int]]) -> Window:
    """CPU use between two samples; `last_own` is each process's value when last seen up to `end`
    (a process that exited in between counts up to its last sample)."""
    seconds = end.at - start.at
    ticks: dict[str, int] = {}
    for key, (group, value) in last_own.items():
        before = start.own.get(key, (group, 0))[1]
        ticks[group] = ticks.get(group, 0) + value - before
    elsewhere = {group.removeprefix("elsewhere "): ticks.pop(group) for group in list(ticks) if "elsewhere " in group}
    lab_seen = sum(value for group, value in ticks.items() if group.startswith("lab "))
    ticks["lab total"] = end.lab_total - start.lab_total
    ticks["lab other"] = ticks["lab total"] - lab_seen
    ticks["worker"] = end.worker_total - start.worker_total  # the tree, its reaped children too

    def pct(value: int) -> float:
        return round(value / CLOCK_TICKS / seconds * 100, 1)

    machine = end.machine_busy - start.machine_busy, end.machine_total - start.machine_total
    busy = round(machine[0] / machine[1] * 100, 1) if machine[1] else 0.0
    # The rest of this machine's busy time: other labs and tests, the kernel (loop devices),
    # the HDD's FUSE daemon. What competes with pgbench for the cores besides benchlab.
    seen = sum(value for group, value in ticks.items() if not group.startswith("lab ")) + ticks["lab total"]
    ticks["machine, everything else"] = machine[0] - seen
    cpu_pct = {group: pct(value) for group, value in sorted(ticks.items())}
    busiest = {name: pct(value) for name, value in sorted(elsewhere.items(), key=lambda item: -item[1])[:6] if value}
    disk = {}
    if start.disk and end.disk:
        counted = zip(DISK_COUNTERS, start.disk, end.disk, strict=True)
        disk = {name: round((after - before) / seconds, 1) for name, before, after in counted}
    return Window(seconds=round(seconds, 2), cpu_pct=cpu_pct, machine_busy_pct=busy, elsewhere_pct=busiest,
                  disk_per_s=disk)  # fmt: skip
