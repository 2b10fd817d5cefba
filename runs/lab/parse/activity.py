"""What else ran on a host while a run measured: two samples of /proc (load average, every
process's CPU time), one at the measured window's start and one at its end
(runs/lab/host/activity.py takes them), and the busiest other processes between the two.
Pure: tested on hand-made /proc text.

Why two samples of /proc/<pid>/stat and not `ps -o %cpu`: ps's %cpu is a process's CPU time
over its whole lifetime. A backup that has idled for a week and burns a core for the run's
two minutes shows as ~0 %, and a daemon that was busy at boot looks busy for ever. The
difference of utime+stime between the window's start and end is what each process took
during the window, and nothing else.

Not seen: a process that started and ended between the two samples (its time goes to its
parent's cutime only when reaped, which would also charge benchlab's own ssh commands to sshd).
"""

import re
from dataclasses import dataclass
from typing import Any

from runs.lab.parse.sections import split_sections

PF_KTHREAD = 0x00200000  # include/linux/sched.h: the process is a kernel thread
BUSIEST = 5
# "1234 (comm) S 1 ...": comm may hold spaces and parentheses; it ends at the last ") ".
_STAT = re.compile(r"(\d+) \((.*)\) (\S.*)")


@dataclass(frozen=True)
class ProcessCpu:
    pid: int
    command: str  # comm: at most 15 bytes, as the kernel keeps it
    ticks: int  # utime + stime, in clock ticks
    started: int  # starttime: clock ticks after boot (with the PID, the process's identity)


@dataclass(frozen=True)
class ActivitySample:
    uptime_s: float | None = None  # /proc/uptime: when the sample was taken, after boot
    load_1m: float | None = None
    clock_ticks: int | None = None  # per second (getconf CLK_TCK)
    cpu_count: int | None = None  # online
    # Every process but the run's own (its user's, its collectors and their children, the
    # sampling shell) and kernel threads: their work is mostly the run's own I/O (loop
    # workers, writeback, the journal) and cannot be told apart from anyone else's.
    others: tuple[ProcessCpu, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "uptime_s": self.uptime_s,
            "load_1m": self.load_1m,
            "clock_ticks": self.clock_ticks,
            "cpu_count": self.cpu_count,
            "others": [[p.pid, p.started, p.ticks, p.command] for p in self.others],
        }


@dataclass(frozen=True)
class _Stat:
    process: ProcessCpu
    ppid: int
    kernel_thread: bool


def _stat_line(line: str) -> _Stat | None:
    """One line of /proc/<pid>/stat; None for a line that is not one (a comm with a newline
    splits its process's line in two: both halves are dropped)."""
    found = _STAT.fullmatch(line.strip())
    if found is None:
        return None
    fields = found.group(3).split()  # fields[0] is stat's field 3 (state): field n is fields[n - 3]
    if len(fields) < 20 or not all(fields[i].isdigit() for i in (1, 6, 11, 12, 19)):
        return None
    ticks = int(fields[11]) + int(fields[12])
    process = ProcessCpu(int(found.group(1)), found.group(2), ticks, int(fields[19]))
    return _Stat(process, ppid=int(fields[1]), kernel_thread=bool(int(fields[6]) & PF_KTHREAD))


def _number(text: str, kind: type[int] | type[float]) -> Any:
    words = text.split()
    try:
        return kind(words[0]) if words else None
    except ValueError:
        return None


def _owners(text: str) -> dict[int, int]:
    owners = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0].isdigit() and words[1].isdigit():
            owners[int(words[0])] = int(words[1])
    return owners


def _own(stats: list[_Stat], own_pids: set[int], owners: dict[int, int], run_uid: int | None) -> set[int]:
    """The run's processes: its user's, the ones named, and every descendant of either."""
    own = set(own_pids) | {pid for pid, uid in owners.items() if uid == run_uid}
    children: dict[int, list[int]] = {}
    for stat in stats:
        children.setdefault(stat.ppid, []).append(stat.process.pid)
    pending = list(own)
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in own:
                own.add(child)
                pending.append(child)
    return own


def activity_sample_from(output: str) -> ActivitySample:
    """An ActivitySample from the output of runs/lab/host/activity.py's snippet."""
    found = split_sections(output)
    stats = [stat for line in found.get("stat", "").splitlines() if (stat := _stat_line(line)) is not None]
    own_pids = {int(word) for word in found.get("own", "").split() if word.isdigit()}
    own = _own(stats, own_pids, _owners(found.get("owners", "")), _number(found.get("run_user", ""), int))
    return ActivitySample(
        uptime_s=_number(found.get("uptime", ""), float),
        load_1m=_number(found.get("loadavg", ""), float),
        clock_ticks=_number(found.get("clock", ""), int),
        cpu_count=_number(found.get("cpus", ""), int),
        others=tuple(s.process for s in stats if s.process.pid not in own and not s.kernel_thread),
    )


def busiest(start: ActivitySample, end: ActivitySample, top: int = BUSIEST) -> list[dict[str, Any]] | None:
    """The `top` other processes by CPU between the samples, in percent of one CPU (as top
    shows it: 200 is two cores); those that took none are left out. None when the samples
    cannot say (a clock missing, no time between them)."""
    clock = end.clock_ticks
    if start.uptime_s is None or end.uptime_s is None or not clock:
        return None
    elapsed = end.uptime_s - start.uptime_s
    if elapsed <= 0:
        return None
    before = {(p.pid, p.started): p.ticks for p in start.others}
    used = []
    for process in end.others:
        ticks_before = before.get((process.pid, process.started))
        if ticks_before is None:
            if process.started / clock < start.uptime_s:
                continue  # it was there at the start but not counted then (the run's own then)
            ticks_before = 0  # started during the window: all its time is the window's
        if (ticks := process.ticks - ticks_before) > 0:
            used.append((ticks, process))
    used.sort(key=lambda pair: (-pair[0], pair[1].pid))
    return [
        {"pid": p.pid, "command": p.command, "cpu_pct": round(ticks / clock / elapsed * 100, 1)}
        for ticks, p in used[:top]
    ]


def activity_sample_from_json(data: object) -> ActivitySample:
    """A sample as ActivitySample.as_json wrote it (the resume record); ValueError if it is not one."""
    if not isinstance(data, dict) or set(data) != {"uptime_s", "load_1m", "clock_ticks", "cpu_count", "others"}:
        raise ValueError("the activity sample is not one")
    numbers = (data["uptime_s"], data["load_1m"], data["clock_ticks"], data["cpu_count"])
    if not all(n is None or (isinstance(n, int | float) and not isinstance(n, bool)) for n in numbers):
        raise ValueError("the activity sample's figures are not numbers")
    others = data["others"]
    if not isinstance(others, list):
        raise ValueError("the activity sample's processes are not a list")
    processes = []
    for item in others:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[3], str)):
            raise ValueError(f"{item!r} is not a process's CPU time")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in item[:3]):
            raise ValueError(f"{item!r} is not a process's CPU time")
        pid, started, ticks, command = item
        processes.append(ProcessCpu(pid, command, ticks, started))
    clock, cpus = data["clock_ticks"], data["cpu_count"]
    return ActivitySample(
        uptime_s=data["uptime_s"],
        load_1m=data["load_1m"],
        clock_ticks=int(clock) if clock is not None else None,
        cpu_count=int(cpus) if cpus is not None else None,
        others=tuple(processes),
    )


def during_json(start: ActivitySample | None, end: ActivitySample | None) -> dict[str, Any]:
    """What a host did between two samples, as Run.environment["method"]["during"] and a probe's
    reading keep it: the load average at each end, the CPUs, the busiest other processes."""
    either = start or end
    return {
        "load_1m_start": start.load_1m if start else None,
        "load_1m_end": end.load_1m if end else None,
        "cpu_count": either.cpu_count if either else None,
        "busiest": busiest(start, end) if start is not None and end is not None else None,
    }
