"""A mount-option sweep on the HDD-like disk: how much of its wall time is measurement, with the
cleanup as it was and as it is (issue 32, point 5).

Such a sweep cannot reuse anything (each configuration makes its own filesystem), and once ran
at campaign efficiency 0.33: 57-81 s a run for 25 s measured, the cleanup alone 16-35 s, most of
it `pg_ctl stop -m fast`'s shutdown checkpoint writing out a cluster about to be thrown away.

Two sides, run through the lab layer (run_benchmark) on one virtual lab host's HDD-like disk:
- "old": no CHECKPOINT and no settle pause before measuring, and the cleanup of before (stop fast,
  then unmount: the shutdown checkpoint pays for every dirty buffer);
- "new": what runs now: a CHECKPOINT and a settle pause before measuring (Run's defaults), and a
  thrown-away cluster stopped immediately with its data removed before the unmount.
Each pair runs the short sweep once per side, the order alternating (benchmarks/pairs.py);
efficiency = Σ measured seconds / Σ wall seconds of the sweep's runs (the lab layer's part: the
dispatch and storing of a run through Celery come on top, on both sides alike). The verdict is
the median of the pairs' new/old efficiency ratios, and whether a run's writes reach the next:
the device's sectors written in the seconds after each run's cleanup (must be 0 on both sides).

Run with `make bench` (as root: it brings up a virtual lab of its own and takes it down).
"""

import argparse
import os
import statistics
import sys
import time
import uuid
from contextlib import nullcontext
from typing import Any
from unittest import mock

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from benchmarks.lab_bench import own_virtual_lab  # noqa: E402
from benchmarks.machine import write_result  # noqa: E402
from benchmarks.pairs import pair_order, ratio_summary  # noqa: E402
from runs.lab.benchmark.run import BenchmarkSpec, remove_run_dir, run_benchmark  # noqa: E402
from runs.lab.benchmark.state import device_writes  # noqa: E402
from runs.lab.options import InitOptions, RunOptions, StateBefore  # noqa: E402
from runs.lab.postgres import cluster  # noqa: E402
from runs.lab.storage.prepare import FilesystemSpec  # noqa: E402
from runs.lab.transport.interface import Transport  # noqa: E402
from runs.tests.virtual_lab import PG_BIN, VirtualLab  # noqa: E402

SIDES = ("old", "new")
TARGET = 1.2  # the new sweep's efficiency over the old one's: the cleanup was a third of a run
SWEEP = ("", "noatime", "barrier=0")
OLD_STATE = StateBefore(checkpoint=False, settle_s=0)  # before issue 32: straight from loading to pgbench
QUIET_AFTER_S = 3.0  # how long the device is watched after a run's cleanup


def spec(lab: VirtualLab, mount_options: str, args: argparse.Namespace, state: StateBefore) -> BenchmarkSpec:
    options = tuple(option for option in mount_options.split(",") if option)
    return BenchmarkSpec(
        device=lab.disk("lab1", "hdd"),
        filesystem=FilesystemSpec("ext4", mount_options=options),
        pg_bin_dir=PG_BIN,
        init=InitOptions(scale=args.scale),
        run=RunOptions(clients=4, threads=2, duration_s=args.seconds),
        run_key=f"sweep-{uuid.uuid4().hex[:12]}",
        state=state,
    )


def old_cleanup(transport: Transport, thrown_away: cluster.Cluster) -> None:
    """The cleanup of before: `pg_ctl stop -m fast` (then immediate), the data left to the unmount."""
    cluster.stop(transport, thrown_away)


def one_run(lab: VirtualLab, transport: Transport, device: str, bench: BenchmarkSpec) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result = run_benchmark(transport, lambda: lab.connect("lab1"), bench)
    finally:
        remove_run_dir(transport, bench.run_key)
    wall_s = time.monotonic() - started
    before = device_writes(transport, device)
    time.sleep(QUIET_AFTER_S)
    after = device_writes(transport, device)
    written = (after[0] - before[0]) if before and after else None
    return {
        "mount_options": ",".join(bench.filesystem.mount_options) or "(default)",
        "ok": result.exit_status == 0,
        "tps": result.summary.tps if result.summary else None,
        "wall_s": round(wall_s, 2),
        "measured_s": bench.run.duration_s,
        "stages": {name: round(seconds, 2) for name, seconds in result.stages.items()},
        "sectors_written_after_cleanup": written,
    }


def sweep(lab: VirtualLab, transport: Transport, device: str, side: str, args: argparse.Namespace) -> dict[str, Any]:
    state = OLD_STATE if side == "old" else StateBefore()
    cleanup = mock.patch.object(cluster, "discard_cluster", old_cleanup) if side == "old" else nullcontext()
    with cleanup:
        runs = [one_run(lab, transport, device, spec(lab, options, args, state)) for options in SWEEP]
    wall = sum(run["wall_s"] for run in runs)
    return {"efficiency": sum(run["measured_s"] for run in runs) / wall, "wall_s": round(wall, 1), "runs": runs}


def medians(sweeps: list[dict[str, Any]], stage: str) -> float | None:
    values = [run["stages"][stage] for s in sweeps for run in s["runs"] if stage in run["stages"]]
    return round(statistics.median(values), 2) if values else None


def measure(args: argparse.Namespace) -> int:
    pairs: list[dict[str, Any]] = []
    firsts: list[str] = []
    with own_virtual_lab() as lab:
        transport = lab.connect("lab1")
        node = transport.run(["readlink", "-f", lab.disk("lab1", "hdd").path]).stdout.strip()
        device = node.rsplit("/", 1)[-1]
        for index in range(args.pairs):
            order = pair_order(index, SIDES)
            firsts.append(order[0])
            pairs.append({side: sweep(lab, transport, device, side, args) for side in order})
            print(f"pair {index + 1}: " + ", ".join(f"{s} {pairs[-1][s]['efficiency']:.3f}" for s in SIDES))
        transport.close()
    return report(pairs, firsts, args)


def report(pairs: list[dict[str, Any]], firsts: list[str], args: argparse.Namespace) -> int:
    ratios = [pair["new"]["efficiency"] / pair["old"]["efficiency"] for pair in pairs]
    summary = ratio_summary(ratios, TARGET, firsts)
    by_side = {side: [pair[side] for pair in pairs] for side in SIDES}
    figures = {
        side: {
            "efficiency_median": round(statistics.median(s["efficiency"] for s in sweeps), 3),
            "run_wall_median_s": round(statistics.median(run["wall_s"] for s in sweeps for run in s["runs"]), 1),
            "cleanup_median_s": medians(sweeps, "cleanup"),
            "state_before_measuring_median_s": medians(sweeps, "state before measuring"),
            "sectors_written_after_cleanup_max": max(
                (run["sectors_written_after_cleanup"] or 0 for s in sweeps for run in s["runs"]), default=0
            ),
            "failed_runs": sum(1 for s in sweeps for run in s["runs"] if not run["ok"]),
        }
        for side, sweeps in by_side.items()
    }
    quiet = all(figures[side]["sectors_written_after_cleanup_max"] == 0 for side in SIDES)
    failed = sum(figures[side]["failed_runs"] for side in SIDES)
    meets = summary["meets"] and quiet and not failed
    old, new = figures["old"], figures["new"]
    verdict = (f"mount-option sweep ({len(SWEEP)} options × {args.seconds} s, scale {args.scale}) on the HDD-like "
               f"disk: efficiency {old['efficiency_median']:.2f} → {new['efficiency_median']:.2f} (new/old median "
               f"{summary['median_ratio']:.2f} over {len(pairs)} pairs; target ≥ {TARGET}); cleanup median "
               f"{old['cleanup_median_s']} s → {new['cleanup_median_s']} s; writes after cleanup "
               f"{'none' if quiet else 'SOME'}: {'meets' if meets else 'MISSES'}")  # fmt: skip
    write_result("cleanup_sweep", {"sweep": list(SWEEP), "seconds_each": args.seconds, "scale": args.scale,
                                   "ratio": summary, "sides": figures, "pairs": pairs}, verdict)  # fmt: skip
    return 0 if meets else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3, help="old/new pairs, the order alternating")
    parser.add_argument("--seconds", type=int, default=15, help="each run's duration")
    parser.add_argument("--scale", type=int, default=5)
    return measure(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
