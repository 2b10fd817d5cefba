"""How many per-second samples a second can benchlab's workers store and forward?

Every running run has a worker process of its own (Celery's prefork pool) that follows
pgbench's progress lines and hands each to collect.progress_reader: RunObserver stores the
second as a RunSample row (bench.services.samples) and publishes it to the run's Redis stream
(runs.jobs.live), which is what a live page reads. This simulates `N` runs at once the same way:
one process forked from this one per run (as prefork forks its children: Django set up, no
database connection inherited), each handing pgbench 15 progress lines to the real
progress_reader on a fixed schedule. One reader in this process follows every run's stream
with XREAD, as the web process does, and notes when each second arrives; afterwards the rows
are counted in PostgreSQL.

A run reports one second a second, so thousands a second would take thousands of worker
processes and PostgreSQL connections; a lab runs tens of runs at once, not thousands. Time is
compressed instead: each run reports `--rate-per-run` of its seconds per wall-clock second (50
by default, a line every 20 ms). What costs is per sample (an upsert committed on its own, an
XADD, waking the worker up), so the figure is the total through the real path, with the runs'
processes contending for the CPUs, PostgreSQL's commits and Redis as real workers do. More
processes at a lower rate each cost more CPU a sample (each sample wakes a cold process):
at 1,000/s, 1 run x 1,000/s used 0.30 ms of worker CPU a sample, 4 x 250/s 0.46 ms, 40 x 25/s
0.77 ms. The offered rate doubles each step (more runs, up to `--max-runs`, then a faster rate
per run) until a rate is missed: a sample lost, or one forwarded more than 1 s after it was
due. A miss is measured once more (a neighbour on a shared machine can take a step's CPU);
then `--refine` steps halve the gap between the last rate met and the first missed.

  lag   when the reader received a second, less when that second was due (a run whose
        worker falls behind delays its next lines, as lines wait in pgbench's file);
  lost  a due second that is not in PostgreSQL or never reached the stream by the end of the
        step plus the lag limit (plus 0.5 s).
Target: >= 2,000 samples/s with nothing lost and no sample later than 1 s.

Run with `python -m benchmarks.ingest` (about 2 minutes).
"""

import argparse
import json
import multiprocessing
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import django

from benchmarks.machine import latency_summary, write_result
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, connections  # noqa: E402

from runs.bench.services.observer import RunObserver  # noqa: E402
from runs.jobs import live  # noqa: E402
from runs.lab.benchmark.collect import BenchmarkResult, progress_reader  # noqa: E402
from runs.lab.storage.prepare import PreparedStorage  # noqa: E402
from runs.models import Device, Host, PgInstall, Run, RunSample, RunState  # noqa: E402

TARGET_PER_S = 2000.0
MAX_LAG_S = 1.0
FIRST_OFFERED_PER_S = 250.0  # doubled each step: 250, 500, 1000, 2000 (the target), 4000, ...
STARTUP_S = 1.0  # before a step's first second is due: every run's process forked and connected


def bench_runs(count: int) -> list[int]:
    """Runs in the measuring state with no warm-up: each sample is stored and shown, nothing more."""
    host, _ = Host.objects.get_or_create(name="bench-host", defaults={"transport": Host.Transport.LOCAL})
    device, _ = Device.objects.get_or_create(host=host, name="disk", kind=Device.Kind.VIRTUAL, path="/srv/bench")
    pg, _ = PgInstall.objects.get_or_create(host=host, bin_dir="/usr/lib/postgresql/15/bin", version="15")
    spec = {"server_host": host, "device": device, "pg_install": pg, "state": RunState.MEASURING, "warmup_s": 0}
    runs = Run.objects.bulk_create([Run(**spec) for _ in range(count)])
    for run in runs:
        live.reset_run_stream(run.pk)
    return [run.pk for run in runs]


def progress_line(second: int) -> str:
    """What pgbench 15 prints each second with --progress=1 (fixtures/pgbench15/tpcb_T5_progress.stderr.txt)."""
    return f"progress: {second}.0 s, 1942.6 tps, lat 2.033 ms stddev 1.538, 0 failed"


@dataclass(frozen=True)
class Schedule:
    """When each of a step's runs is due to report each of its seconds."""

    start: float  # epoch of every run's first second
    rate_per_run: float  # seconds of a run reported per wall-clock second
    seconds: int  # of each run

    def due(self, second: int) -> float:
        return self.start + (second - 1) / self.rate_per_run

    @property
    def span_s(self) -> float:
        return self.seconds / self.rate_per_run

    @property
    def give_up_at(self) -> float:
        """After this a second is late beyond the limit: the reader stops, the runs stop producing."""
        return self.due(self.seconds) + MAX_LAG_S + 0.5


def simulated_run(run_id: int, schedule: Schedule) -> None:
    """One worker process's run: each progress line handed to the worker's own line handler
    when it is due, or at once when the worker is behind; none after give_up_at (too late to
    count, and the next step must not share the machine with it)."""
    observer = RunObserver(Run.objects.get(pk=run_id))
    on_line = progress_reader(observer, BenchmarkResult(storage=PreparedStorage("/srv/bench", "ext4", None, "")))
    try:
        for second in range(1, schedule.seconds + 1):
            wait = schedule.due(second) - time.time()
            if wait > 0:
                time.sleep(wait)
            elif time.time() > schedule.give_up_at:
                break
            on_line(progress_line(second))
    finally:
        connection.close()


def forwarded(run_ids: list[int], until: float) -> dict[tuple[int, int], float]:
    """When each (run, second) reached its run's stream, read as a live page's stream reads it."""
    reader = redis.Redis.from_url(settings.REDIS_URL)
    after = {live.run_stream(run_id): "0-0" for run_id in run_ids}
    run_of = {live.run_stream(run_id): run_id for run_id in run_ids}
    arrived: dict[tuple[int, int], float] = {}
    try:
        while time.time() < until:
            answer: Any = reader.xread(after, block=100, count=10_000)  # type: ignore[arg-type]
            now = time.time()
            for stream, entries in answer or []:
                name = stream.decode()
                for _, fields in entries:
                    if fields[b"kind"] == b"sample":
                        arrived.setdefault((run_of[name], json.loads(fields[b"data"])["second"]), now)
                after[name] = entries[-1][0].decode()
    finally:
        reader.close()
    return arrived


def stored(run_ids: list[int]) -> set[tuple[int, int]]:
    return set(RunSample.objects.filter(run_id__in=run_ids).values_list("run_id", "second"))


def machine_busy_s() -> float:
    """CPU seconds every process on the machine has used since boot (not idle, not waiting for I/O):
    with the workers' own, it tells a step that had the machine from one that shared it."""
    ticks = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def busy_pct_since(busy_s: float, started: float) -> float:
    """How busy the machine has been, all CPUs, since machine_busy_s() was busy_s at time.monotonic() started."""
    return 100 * (machine_busy_s() - busy_s) / ((time.monotonic() - started) * (os.cpu_count() or 1))


def busy_pct_over(seconds: float) -> float:
    """How busy the machine is over the next `seconds` (before a step: what else runs on it)."""
    busy_s, started = machine_busy_s(), time.monotonic()
    time.sleep(seconds)
    return busy_pct_since(busy_s, started)


def children_cpu_s() -> float:
    """CPU time of this process's ended (and waited for) children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_simulated(run_ids: list[int], schedule: Schedule) -> tuple[dict[tuple[int, int], float], int, float]:
    """Each run in a process of its own while this one reads their streams: the arrivals, how
    many processes failed, and the CPU seconds they used."""
    connections.close_all()  # each forked process opens its own, as a prefork child does
    fork = multiprocessing.get_context("fork")
    processes = [fork.Process(target=simulated_run, args=(run_id, schedule)) for run_id in run_ids]
    cpu_before = children_cpu_s()
    for process in processes:
        process.start()
    arrived = forwarded(run_ids, until=schedule.give_up_at)
    for process in processes:
        process.join()
    live.client().delete(*(live.run_stream(run_id) for run_id in run_ids))  # once nothing can publish to them
    return arrived, sum(process.exitcode != 0 for process in processes), children_cpu_s() - cpu_before


def step(runs: int, rate_per_run: float, duration_s: float) -> dict[str, Any]:
    """`runs` simulated runs at once for duration_s, each producing rate_per_run seconds a second."""
    busy_before_pct = busy_pct_over(0.5)
    run_ids = bench_runs(runs)
    seconds = max(1, round(rate_per_run * duration_s))
    schedule = Schedule(start=time.time() + STARTUP_S + 0.01 * runs, rate_per_run=rate_per_run, seconds=seconds)
    busy_s, started = machine_busy_s(), time.monotonic()
    arrived, failed, cpu_s = run_simulated(run_ids, schedule)
    busy_pct = busy_pct_since(busy_s, started)
    in_database = stored(run_ids)
    due = {(run_id, second) for run_id in run_ids for second in range(1, seconds + 1)}
    lags_ms = [(arrived[key] - schedule.due(key[1])) * 1000 for key in due if key in arrived]
    return {
        "runs": runs,
        "rate_per_run": rate_per_run,
        "offered_per_s": len(due) / schedule.span_s,
        "stored_per_s": len(in_database & due) / schedule.span_s,
        "forwarded_per_s": len(set(arrived) & due) / schedule.span_s,
        "due": len(due),
        "lost": len(due - (in_database & set(arrived))),
        "lag_ms": (latency_summary(lags_ms) | {"max": max(lags_ms)}) if lags_ms else None,
        "worker_cpu_ms_per_sample": 1000 * cpu_s / len(due),
        "machine_busy_pct": busy_pct,  # of all CPUs, everything on the machine, the step's start to its end
        "busy_before_pct": busy_before_pct,  # the same in the half second before it: what else ran
        "workers_failed": failed,
    }


def sustained(figures: dict[str, Any]) -> bool:
    """Nothing lost, every sample forwarded within the lag limit."""
    lag = figures["lag_ms"]
    return figures["lost"] == 0 and lag is not None and lag["max"] <= MAX_LAG_S * 1000


def runs_and_rate(offered_per_s: float, base_rate_per_run: float, max_runs: int) -> tuple[int, float]:
    """More runs at the base rate while there may be more; then each of them faster."""
    runs = min(max_runs, max(1, round(offered_per_s / base_rate_per_run)))
    return runs, offered_per_s / runs


def print_step(figures: dict[str, Any]) -> None:
    lag = figures["lag_ms"] or dict.fromkeys(("p50", "p95", "p99", "max"), float("nan"))
    print(f"{figures['runs']:>4} runs × {figures['rate_per_run']:>5.0f}/s: offered {figures['offered_per_s']:>6.0f}/s, "
          f"stored {figures['stored_per_s']:>6.0f}/s, forwarded {figures['forwarded_per_s']:>6.0f}/s, "
          f"lost {figures['lost']:>5}, lag ms p50 {lag['p50']:.0f} p95 {lag['p95']:.0f} p99 {lag['p99']:.0f} "
          f"max {lag['max']:.0f}; worker CPU {figures['worker_cpu_ms_per_sample']:.2f} ms a sample, "
          f"machine {figures['machine_busy_pct']:.0f} % busy ({figures['busy_before_pct']:.0f} % before)",
          flush=True)  # fmt: skip


def offered_step(offered_per_s: float, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The rate's attempts: a miss is measured again (up to --attempts in all), since on a
    shared machine a neighbour can take a step's CPU; every attempt is reported."""
    runs, rate_per_run = runs_and_rate(offered_per_s, args.rate_per_run, args.max_runs)
    attempts: list[dict[str, Any]] = []
    while len(attempts) < args.attempts and not any(sustained(a) for a in attempts):
        attempts.append(step(runs, rate_per_run, args.step_seconds) | {"attempt": len(attempts) + 1})
        print_step(attempts[-1])
    return attempts


def measure(args: argparse.Namespace) -> int:
    steps: list[dict[str, Any]] = []
    passed, failed = 0.0, None
    offered = args.first
    while failed is None and offered <= args.last:  # doubling up to the first rate missed
        steps += offered_step(offered, args)
        passed, failed = (offered, None) if sustained(steps[-1]) else (passed, offered)
        offered *= 2
    for _ in range(args.refine if passed and failed else 0):  # then halving the gap
        assert failed is not None
        offered = (passed + failed) / 2
        steps += offered_step(offered, args)
        passed, failed = (offered, failed) if sustained(steps[-1]) else (passed, offered)
    results: dict[str, Any] = {
        "step_seconds": args.step_seconds,
        "max_lag_s": MAX_LAG_S,
        "target_per_s": TARGET_PER_S,
        "steps": steps,
        "sustained_per_s": passed,
        "first_failed_per_s": failed,  # None: no step failed up to --last
    }
    meets = passed >= TARGET_PER_S
    verdict = (f"ingest: {passed:.0f} samples/s stored and forwarded with none lost and none later than "
               f"{MAX_LAG_S:g} s (target >= {TARGET_PER_S:.0f}/s): {'meets' if meets else 'MISSES'}")  # fmt: skip
    write_result("ingest", results, verdict)
    return 0 if meets else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step-seconds", type=float, default=12.0, help="how long each step offers its rate")
    parser.add_argument("--rate-per-run", type=float, default=50.0, help="seconds each run reports a second")
    parser.add_argument("--max-runs", type=int, default=40, help="runs at once at most (PostgreSQL connections)")
    parser.add_argument("--first", type=float, default=FIRST_OFFERED_PER_S, help="the first step's samples/s")
    parser.add_argument("--last", type=float, default=16_000.0, help="no step beyond this many samples/s")
    parser.add_argument("--refine", type=int, default=2, help="steps between the last rate met and the first missed")
    parser.add_argument("--attempts", type=int, default=2, help="tries at a rate before it counts as missed")
    args = parser.parse_args()
    return in_throwaway_database("bench_ingest", lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
