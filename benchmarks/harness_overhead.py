"""What does benchlab cost the measurement it makes? The same pgbench configuration through
benchlab and by hand over plain ssh, interleaved, on the RAM disk and on the HDD-like disk.

Through benchlab: a real run (queued, a real Celery worker, the virtual lab's host), with what a
user leaves on: iostat and vmstat beside pgbench, pgbench's progress followed live (stored and
published each second), every transaction logged (the default sampling rate, 1). By hand
(direct_pgbench.py): the same device formatted by the same mkfs command and mounted with the
same options, a cluster with the same settings, `pgbench -i` and pgbench with the command lines
the benchlab run recorded (only the socket and log directories are its own), pgbench in the
foreground of one ssh session, nothing else, started as long after the end of `pgbench -i` as
the benchlab run's pgbench was (both measured the same way, from the processes' start times).
Both start from a freshly made filesystem and a freshly loaded database, with no warm-up cut
off; each side's figure is pgbench's own summary tps for its whole run (Run.tps on benchlab's
side), so both cover the same window by the same clock. One benchlab run per disk goes first
and does not count (a fresh lab's first run is slower).

Pairs alternate which side goes first (benchlab first in pair 1: the direct side takes its
command lines from the latest benchlab run). Reported per disk: each pair's tps both ways, the
median ratio benchlab / direct with its spread (min to max, interquartile range), target ≥ 0.99;
and the CPU time of every process around each measurement while pgbench ran (process_cpu.py):
on the lab host pgbench, PostgreSQL, sshd, tail, iostat, vmstat and the rest; on this machine
the worker, benchlab's database backends, Redis, and the busiest of everything else (other labs
and test runs share this machine: the pairs are interleaved because of them), with the disk's
I/O. This machine has 2 cores shared by the lab hosts and benchlab: on the RAM disk pgbench is
CPU-bound, and what benchlab spends is taken from it; the HDD-like disk's speed depends on how
soon its FUSE daemon gets a core after each delay.

Run with `make bench` (as root: it brings up a virtual lab of its own and takes it down), or
`.venv/bin/python -m benchmarks.harness_overhead --help`.
"""

import argparse
import os
import shlex
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import django

from benchmarks.direct_pgbench import SshHost, direct_run, known_hosts
from benchmarks.direct_scripts import Place, Recorded
from benchmarks.machine import write_result
from benchmarks.pairs import cpu_medians, harness_cpu_pct, pair_order, ratio_summary
from benchmarks.process_cpu import CpuWatch, Window
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402

from benchmarks.lab_bench import (  # noqa: E402
    bench_user,
    lab_worker,
    own_virtual_lab,
    registered_hosts,
    wait_until_finished,
)
from runs.bench.services.runs import run_enqueue  # noqa: E402
from runs.lab.parse.pgbench_summary import parse_init_done, parse_summary  # noqa: E402
from runs.models import Host, Run, RunState  # noqa: E402 - needs django.setup()
from runs.tests.virtual_lab import PG_BIN, VirtualLab  # noqa: E402
from runs.tests.workers import CeleryWorker  # noqa: E402

TARGET_RATIO = 0.99
MIN_PAIRS = 5  # fewer say too little for a verdict
HOST = "lab1"
SIDES = ("benchlab", "direct")
WORKER_CONCURRENCY = 4  # as scripts/worker runs one


def bench_run(host: Host, disk: str, user: User, args: argparse.Namespace) -> Run:
    """The configuration, with everything else as a user leaves it (the model's defaults:
    ext4 with default mount options, default settings, no warm-up, every transaction logged)."""
    return Run(
        server_host=host, device=host.devices.get(name=disk), pg_install=host.pg_installs.get(bin_dir=PG_BIN),
        workload="tpcb-like", scale=args.scale, clients=args.clients, threads=args.threads,
        duration_s=args.seconds, queued_by=user,
    )  # fmt: skip


class Bench:
    """One lab host's pairs, both sides watched alike. The direct side repeats what the latest
    benchlab run recorded: its command lines, and how long after the load its pgbench started."""

    def __init__(
        self, lab: VirtualLab, host: Host, user: User, worker: CeleryWorker, ssh: SshHost, known_hosts_file: str
    ) -> None:
        self.lab, self.host, self.user, self.worker = lab, host, user, worker
        self.ssh, self.known_hosts_file = ssh, known_hosts_file
        self.namespace_pid = int(lab.host(HOST)["sshd_pid"])  # its children are the host's processes
        with connection.cursor() as cursor:  # this process's own backend is not benchlab's
            cursor.execute("SELECT pg_backend_pid()")
            self.own_backend = int(cursor.fetchone()[0])
        self.recorded: Recorded | None = None
        self.gaps: dict[str, list[float]] = {}  # by device: each benchlab run's, from the load to pgbench

    def watch(self, device_node: str) -> CpuWatch:
        """CPU use around the measurement, and the device's I/O."""
        database = str(settings.DATABASES["default"]["NAME"])
        device = Path(device_node).name
        return CpuWatch(self.namespace_pid, self.worker.pid, database, self.own_backend, device=device)

    def benchlab(self, disk: str, args: argparse.Namespace) -> dict[str, Any]:
        started = time.monotonic()
        with self.watch(self.lab.host(HOST)["disks"][disk]["loop"]) as watch:
            run = wait_until_finished(run_enqueue(run=bench_run(self.host, disk, self.user, args)), 900)
        if run.state != RunState.DONE or run.tps is None:
            raise RuntimeError(f"run {run.pk} ended {run.state}: {run.error}\n{run.failed_output}")
        self.recorded = recorded = Recorded.from_environment(run.environment)
        expected = self.lab.host(HOST)["disks"][disk]["loop"]
        if recorded.device_node != expected:
            raise RuntimeError(f"run {run.pk} formatted {recorded.device_node}, the lab's {disk} is {expected}")
        init_output = run.artifacts.get(name="pgbench-init.txt").content
        gap = watch.gap_s(_init_seconds(init_output))
        self.gaps.setdefault(expected, []).append(gap if gap is not None else benchlab_gap_s(run))
        figures = {"tps": run.tps, "run": run.pk, "gap_s": _rounded(gap)}
        return figures | {"wall_s": round(time.monotonic() - started, 1)} | _window(watch.window())

    def direct(self, args: argparse.Namespace) -> dict[str, Any]:
        if self.recorded is None:
            raise RuntimeError("the direct side repeats a benchlab run: none has run yet")
        started = time.monotonic()
        place = Place(uuid.uuid4().hex[:12])
        # benchlab's gap varies from run to run (0.2 to 1 s): the direct side takes its median so far.
        gap_s = statistics.median(self.gaps[self.recorded.device_node])
        with self.watch(self.recorded.device_node) as watch:
            result = direct_run(self.ssh, self.known_hosts_file, self.recorded, place, gap_s, args.seconds + 900)
        summary = parse_summary(result.stdout, result.stderr)
        if result.exit_status != 0 or summary.tps is None:
            raise RuntimeError(f"direct pgbench failed ({result.exit_status}): {result.stderr[-2000:]}")
        gap = watch.gap_s(_init_seconds(result.init_output))
        figures = {"tps": summary.tps, "command": result.command, "gap_s": _rounded(gap),
                   "gap_by_date_s": _rounded(result.gap_s)}  # fmt: skip
        return figures | {"wall_s": round(time.monotonic() - started, 1)} | _window(watch.window())


def _init_seconds(init_output: str) -> float | None:
    done = parse_init_done(init_output)
    return done.total_s if done else None


def benchlab_gap_s(run: Run) -> float:
    """If the load's end was not seen: from the step into the measurement (after the load and a
    few commands) to pgbench's recorded start, which is shorter than the whole gap."""
    step = run.transitions.filter(state__in=[RunState.WARMING_UP, RunState.MEASURING]).first()
    started = (run.environment.get("pgbench") or {}).get("started_epoch")
    if step is None or started is None:
        return 0.0
    return max(0.0, float(started) - step.at.timestamp())


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _window(window: Window) -> dict[str, Any]:
    return {
        "window_s": window.seconds,
        "samples": window.samples,
        "machine_busy_pct": window.machine_busy_pct,
        "cpu_pct": window.cpu_pct,
        "elsewhere_cpu_pct": window.elsewhere_pct,
        "disk_per_s": window.disk_per_s,
    }


def measure_disk(bench: Bench, disk: str, args: argparse.Namespace) -> dict[str, Any]:
    for number in range(1, args.warmup_runs + 1):  # a fresh lab's first runs are slower: not a pair's
        warmup = bench.benchlab(disk, args)
        print(f"{disk} warm-up run {number}: benchlab {warmup['tps']:.1f} tps", file=sys.stderr, flush=True)
    pairs: list[dict[str, Any]] = []
    for index in range(args.pairs):
        pair: dict[str, Any] = {"first": pair_order(index, SIDES)[0]}
        for side in pair_order(index, SIDES):
            pair[side] = bench.benchlab(disk, args) if side == "benchlab" else bench.direct(args)
        pair["ratio"] = pair["benchlab"]["tps"] / pair["direct"]["tps"]
        print(f"{disk} pair {index + 1}/{args.pairs} ({pair['first']} first): benchlab "
              f"{pair['benchlab']['tps']:.1f} tps, direct {pair['direct']['tps']:.1f} tps, "
              f"ratio {pair['ratio']:.3f}", file=sys.stderr, flush=True)  # fmt: skip
        pairs.append(pair)
    assert bench.recorded is not None
    commands = {"benchlab": shlex.join(bench.recorded.command), "direct": pairs[-1]["direct"]["command"]}
    for pair in pairs:
        del pair["direct"]["command"]
    summary = ratio_summary([pair["ratio"] for pair in pairs], TARGET_RATIO, [pair["first"] for pair in pairs])
    cpu = cpu_medians(pairs, SIDES)
    return summary | {
        "tps_median": {side: statistics.median(pair[side]["tps"] for pair in pairs) for side in SIDES},
        "harness_cpu_pct": harness_cpu_pct(cpu),
        "pair_results": pairs,
        "cpu_pct_median": cpu,
        "commands": commands,
    }


def measure(args: argparse.Namespace) -> int:
    with own_virtual_lab() as lab:
        host = registered_hosts(lab, [HOST])[0]
        user = bench_user()
        lab_host = lab.host(HOST)
        ssh = SshHost(lab_host["address"], lab_host["host_key_pub"], lab.state["client_key"])
        with lab_worker(concurrency=WORKER_CONCURRENCY) as worker, known_hosts(ssh) as known_hosts_file:
            bench = Bench(lab, host, user, worker, ssh, known_hosts_file)
            disks = {disk: measure_disk(bench, disk, args) for disk in args.disks}
    results: dict[str, Any] = {
        "configuration": {
            "workload": "tpcb-like", "scale": args.scale, "clients": args.clients, "threads": args.threads,
            "duration_s": args.seconds, "filesystem": "ext4", "log_sampling_rate": Run().log_sampling_rate,
            "collectors": ["iostat", "vmstat"], "worker": f"prefork, concurrency {WORKER_CONCURRENCY}",
        },
        "target_ratio": TARGET_RATIO,
        "warmup_runs": args.warmup_runs,
        "disks": disks,
    }  # fmt: skip
    enough = args.pairs >= MIN_PAIRS
    meets = enough and all(disk["meets"] for disk in disks.values())
    said = ", ".join(f"{name} {_said(d)}" for name, d in disks.items())
    outcome = ("meets" if meets else "MISSES") if enough else f"no verdict from fewer than {MIN_PAIRS} pairs"
    verdict = f"harness overhead: tps benchlab / direct, order taken out, {said} (target ≥ {TARGET_RATIO}): {outcome}"
    write_result("harness_overhead", results, verdict)
    return 0 if meets else 1


def _said(disk: dict[str, Any]) -> str:
    pairs = f"median of pairs {disk['median_ratio']:.3f}, {disk['min_ratio']:.3f} to {disk['max_ratio']:.3f}"
    crossover = disk.get("crossover")
    if crossover is None:
        return f"{disk['verdict_ratio']:.3f} ({pairs}, {disk['pairs']} pairs)"
    resolved = "resolved" if disk["resolved"] else "not resolved"
    interval = f"95 % interval {crossover['low']:.3f} to {crossover['high']:.3f}: {resolved}"
    return f"{disk['verdict_ratio']:.3f} ({interval}; {pairs}, {disk['pairs']} pairs)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=16, help="pairs per disk (even: as many each way)")
    parser.add_argument("--seconds", type=int, default=20, help="each pgbench's duration")
    parser.add_argument("--warmup-runs", type=int, default=1, help="benchlab runs per disk first, not counted")
    parser.add_argument("--scale", type=int, default=5, help="pgbench -i scale")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--disks", nargs="+", default=["ram", "hdd"], choices=("ram", "hdd", "ssd"))
    args = parser.parse_args()
    return in_throwaway_database("bench_harness", lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
