"""What else ran on a host during the measured window, from two hand-made samples of /proc
(runs/lab/parse/activity.py): the run's own processes and kernel threads left out, a
process's CPU over the window only, /proc/<pid>/stat's comm with spaces and parentheses."""

from dataclasses import dataclass

import pytest

from runs.lab.parse.activity import (
    PF_KTHREAD,
    ActivitySample,
    ProcessCpu,
    activity_sample_from,
    activity_sample_from_json,
    busiest,
)

RUN_UID = 998
CLOCK = 100


@dataclass(frozen=True)
class Proc:
    pid: int
    comm: str
    ticks: int = 0  # utime + stime (split as utime = ticks - 1, stime = 1 when there are any)
    ppid: int = 1
    uid: int = 0
    started: int = 100  # clock ticks after boot
    flags: int = 0x400100

    def stat(self) -> str:
        utime, stime = (self.ticks - 1, 1) if self.ticks else (0, 0)
        fields = [self.pid, f"({self.comm})", "S", self.ppid, self.pid, self.pid, 0, -1, self.flags, 500, 0, 0, 0,
                  utime, stime, 0, 0, 20, 0, 1, 0, self.started, 10_000_000, 400]  # fmt: skip
        return " ".join(map(str, fields))


def sample_text(uptime: float, load: float, processes: list[Proc], own: str = "", cpus: int = 4) -> str:
    """As runs/lab/host/activity.py's snippet prints it; `own`: the shell's PID and the pid files' text."""
    owners = "".join(f"{p.pid} {p.uid}\n" for p in processes)
    return (
        f"==uptime\n{uptime} 1000.0\n==loadavg\n{load} 0.50 0.40 2/300 4000\n==clock\n{CLOCK}\n==cpus\n{cpus}\n"
        f"==run_user\n{RUN_UID}\n==own\n{own}\n==owners\n{owners}==stat\n" + "".join(p.stat() + "\n" for p in processes)
    )


def test_the_run_user_the_collectors_the_sampling_shell_and_kernel_threads_are_not_others() -> None:
    processes = [
        Proc(1, "systemd", 50),
        Proc(2, "kthreadd", 0, ppid=0, flags=PF_KTHREAD),
        Proc(40, "kworker/u4:2+loop2", 900, ppid=2, flags=0x04208060),  # PF_KTHREAD set among others
        Proc(300, "postgres", 700, uid=RUN_UID),
        Proc(301, "postgres", 900, ppid=300, uid=RUN_UID),
        Proc(310, "pgbench", 400, uid=RUN_UID),
        Proc(400, "sh", 1),  # the iostat wrapper (its pid file)
        Proc(401, "iostat", 30, ppid=400),
        Proc(500, "sh", 2),  # the sampling shell ($$)
        Proc(501, "cat", 1, ppid=500),
        Proc(600, "backup", 5000),
    ]

    sample = activity_sample_from(sample_text(1000.0, 1.25, processes, own="500\n400\n\n"))

    assert [p.pid for p in sample.others] == [1, 600]
    assert (sample.uptime_s, sample.load_1m, sample.clock_ticks, sample.cpu_count) == (1000.0, 1.25, CLOCK, 4)


def test_a_comm_with_spaces_and_parentheses_is_read_whole() -> None:
    tricky = [Proc(7, "my (weird) name", 10), Proc(8, "a) R 7 (b", 20), Proc(9, "tmux: server", 30)]

    sample = activity_sample_from(sample_text(10.0, 0.1, tricky))

    assert [(p.pid, p.command, p.ticks) for p in sample.others] == [
        (7, "my (weird) name", 10),
        (8, "a) R 7 (b", 20),
        (9, "tmux: server", 30),
    ]


def test_a_line_that_is_not_a_stat_line_is_skipped() -> None:
    text = sample_text(10.0, 0.1, [Proc(7, "ok", 10)]) + "12 (half of a name\nwith a newline) S 1 2\ngarbage\n"

    assert [p.pid for p in activity_sample_from(text).others] == [7]


def test_the_busiest_others_over_the_window_by_their_cpu_then_not_by_their_lifetime() -> None:
    # 20 s apart at 100 ticks a second: 2000 ticks are one CPU for the whole window.
    start = [Proc(1, "systemd", 50), Proc(20, "old daemon", 90_000), Proc(30, "backup", 1000), Proc(40, "cron", 5)]
    end = [
        Proc(1, "systemd", 52),
        Proc(20, "old daemon", 90_010),  # busy long ago: 10 ticks now
        Proc(30, "backup", 4000),  # 1.5 CPUs
        Proc(40, "cron", 5),  # idle: left out
        Proc(50, "compile", 600, started=110_000),  # started at 1100 s, inside the window: all its time
        Proc(60, "was own", 9000, started=50),  # there before the window, not counted then: left out
    ]

    found = busiest(
        activity_sample_from(sample_text(1000.0, 0.5, start)), activity_sample_from(sample_text(1020.0, 2.5, end))
    )

    assert found == [
        {"pid": 30, "command": "backup", "cpu_pct": 150.0},
        {"pid": 50, "command": "compile", "cpu_pct": 30.0},
        {"pid": 20, "command": "old daemon", "cpu_pct": 0.5},
        {"pid": 1, "command": "systemd", "cpu_pct": 0.1},
    ]


def test_a_reused_pid_is_another_process_and_only_the_top_five_are_kept() -> None:
    start = [Proc(10, "first", 5000, started=100), *[Proc(pid, f"p{pid}", 0) for pid in range(20, 27)]]
    end = [Proc(10, "second", 200, started=100_100), *[Proc(pid, f"p{pid}", pid) for pid in range(20, 27)]]

    found = busiest(
        activity_sample_from(sample_text(1000.0, 0.5, start)), activity_sample_from(sample_text(1010.0, 0.5, end))
    )

    assert found is not None and len(found) == 5
    assert found[0] == {"pid": 10, "command": "second", "cpu_pct": 20.0}  # not 200 - 5000
    assert [entry["pid"] for entry in found[1:]] == [26, 25, 24, 23]


def test_samples_that_cannot_say_give_no_busiest() -> None:
    taken = activity_sample_from(sample_text(1000.0, 0.5, [Proc(1, "init", 5)]))

    assert busiest(taken, taken) is None  # no time between them
    assert busiest(ActivitySample(), taken) is None
    assert activity_sample_from("") == ActivitySample()


def test_a_sample_survives_the_resume_record_and_a_bad_one_is_refused() -> None:
    sample = ActivitySample(1000.5, 0.25, 100, 2, (ProcessCpu(7, "my (weird) name", 12, 34),))

    assert activity_sample_from_json(sample.as_json()) == sample
    with pytest.raises(ValueError, match="is not a process's CPU time"):
        activity_sample_from_json(sample.as_json() | {"others": [[7, 34, "12", "x"]]})
    with pytest.raises(ValueError, match="not numbers"):
        activity_sample_from_json(sample.as_json() | {"load_1m": "high"})
