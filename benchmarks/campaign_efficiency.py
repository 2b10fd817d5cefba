"""How much of a campaign's wall time is measurement?

A campaign of `--configurations` configurations (1, 2, 4, … clients) times `--repetitions` runs of
`--seconds` each, on one virtual lab host's RAM disk, queued the way the campaign form queues it
(round by round) and run by a real Celery worker, with storage and database reuse (the
campaign's default). Efficiency is Σ measured seconds (pgbench's -T of every run) over the wall
time from queuing the campaign to its last run's end; target ≥ 0.8.

Where the rest goes is read from each run's state history (RunTransition) and the timed stages
the lab layer records (environment.stages): the wait for a worker, storage, the cluster, the
load, the measurement's own edges, collecting, cleanup, and the gap before the next run.

Run with `make bench` (as root: it brings up a virtual lab of its own and takes it down).
"""

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import replace
from datetime import datetime
from itertools import pairwise
from typing import Any

import django

from benchmarks.machine import write_result
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from django.contrib.auth.models import User  # noqa: E402

from benchmarks.lab_bench import bench_user, lab_worker, own_virtual_lab, registered_hosts  # noqa: E402
from runs.bench.specs import RunSpec  # noqa: E402
from runs.campaigns.matrix import Variable  # noqa: E402
from runs.campaigns.services.campaigns import CampaignPlan, campaign_create  # noqa: E402
from runs.lab.transport.waiting import wait_until  # noqa: E402
from runs.models import Campaign, Host, Run, RunState, RunTransition  # noqa: E402
from runs.tests.virtual_lab import PG_BIN  # noqa: E402

TARGET = 0.8
FINAL = {RunState.DONE, RunState.FAILED, RunState.CANCELLED}


def campaign_plan(host: Host, args: argparse.Namespace, device: str = "ram") -> CampaignPlan:
    base = RunSpec(
        server_host_id=host.pk, device_id=host.devices.get(name=device).pk, filesystem="ext4",
        pg_install_id=host.pg_installs.get(bin_dir=PG_BIN).pk, scale=args.scale, clients=1, threads=1,
        duration_s=args.seconds, warmup_s=0,
    )  # fmt: skip
    clients = tuple(str(2**i) for i in range(args.configurations))
    return CampaignPlan(name="efficiency", description="make bench", base=base,
                        variables=[Variable("clients", clients)], repetitions=args.repetitions)  # fmt: skip


def wait_for(campaign: Campaign, timeout_s: float) -> None:
    unfinished = Run.objects.filter(campaign=campaign).exclude(state__in=FINAL)
    if not wait_until(lambda: not unfinished.exists(), timeout_s, 0.5):
        raise TimeoutError(f"the campaign did not finish within {timeout_s:.0f} s")


def seconds_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds()


def where_time_went(runs: list[Run], queued_at: datetime) -> dict[str, float]:
    """Wall time by what it was spent on, summed over the runs (one host: they do not overlap)."""
    spent: dict[str, float] = defaultdict(float)
    previous_end = queued_at
    for run in runs:
        assert run.started_at and run.finished_at
        spent["waiting for a worker (dispatch)"] += seconds_between(previous_end, run.started_at)
        moments = [(t.state, t.at) for t in RunTransition.objects.filter(run=run).order_by("at", "id")]
        for (state, at), (_, following) in pairwise(moments):
            if state != RunState.QUEUED:
                spent[f"state: {state}"] += seconds_between(at, following)
        previous_end = run.finished_at
    return dict(spent)


def stage_seconds(runs: list[Run]) -> dict[str, dict[str, float]]:
    """The lab layer's timed stages (environment.stages): median and total over the runs."""
    seen: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for name, seconds in (run.environment.get("stages") or {}).items():
            seen[name].append(seconds)
    return {name: {"median_s": statistics.median(v), "total_s": sum(v), "runs": len(v)} for name, v in seen.items()}


def measure(args: argparse.Namespace) -> int:
    with own_virtual_lab() as lab:
        (host,) = registered_hosts(lab, ["lab1"])
        user = bench_user()
        plan = campaign_plan(host, args)
        if refused := [f"{cell.label}: {dict(cell.errors)}" for cell in plan.cells() if not cell.valid]:
            print("configurations refused:", *refused, sep="\n  ", file=sys.stderr)
            return 2
        with lab_worker(concurrency=2):
            reusing = campaign_figures(plan, user)
            # For contrast: what reuse saves (a fresh database per run), and what a slow disk's
            # write-back costs between runs (the HDD-like disk).
            fresh = campaign_figures(replace(plan, repetitions=args.contrast_rounds, fresh_database=True), user)
            hdd = replace(campaign_plan(host, args, device="hdd"), repetitions=args.contrast_rounds)
            on_hdd = campaign_figures(hdd, user)
    return report(reusing, fresh, on_hdd)


def campaign_figures(plan: CampaignPlan, user: User) -> dict[str, Any]:
    """Queue the campaign, wait for its end: its efficiency and where the rest of its time went."""
    started = time.time()
    campaign = campaign_create(plan=plan, by=user)
    runs_queued = Run.objects.filter(campaign=campaign).count()
    wait_for(campaign, timeout_s=runs_queued * (plan.base.duration_s + 180))
    wall_s = time.time() - started
    runs = list(Run.objects.filter(campaign=campaign).order_by("started_at"))
    measured = sum(r.duration_s + r.warmup_s for r in runs if r.state == RunState.DONE)
    return {
        "configurations": len(runs) // max(plan.repetitions, 1),
        "repetitions": plan.repetitions,
        "seconds_each": plan.base.duration_s,
        "device": Run.objects.filter(campaign=campaign).values_list("device__name", flat=True).first(),
        "scale": plan.base.scale,
        "fresh_database": plan.fresh_database,
        "runs": len(runs),
        "failed": [f"run {r.pk}: {r.state} {r.error}" for r in runs if r.state != RunState.DONE],
        "reused": sum(1 for r in runs if (r.environment.get("reuse") or {}).get("reused_from_run")),
        "measured_s": measured,
        "wall_s": round(wall_s, 1),
        "efficiency": round(measured / wall_s, 3),
        "per_run_overhead_s": round((wall_s - measured) / max(len(runs), 1), 2),
        "where_time_went_s": {k: round(v, 1) for k, v in where_time_went(runs, campaign.created_at).items()},
        "stages": stage_seconds(runs),
    } | {"outside_the_lab_layer_s": round(wall_s - sum(s["total_s"] for s in stage_seconds(runs).values()), 1)}


def report(reusing: dict[str, Any], fresh: dict[str, Any], on_hdd: dict[str, Any]) -> int:
    efficiency = reusing["efficiency"]
    failed = [*reusing["failed"], *fresh["failed"], *on_hdd["failed"]]
    meets = efficiency >= TARGET and not failed
    verdict = (f"campaign efficiency {efficiency:.2f} ({reusing['measured_s']} s measured in {reusing['wall_s']:.0f} s "
               f"wall, {reusing['per_run_overhead_s']:.1f} s overhead a run; target ≥ {TARGET}): "
               f"{'meets' if meets else 'MISSES'}; a fresh database per run: {fresh['efficiency']:.2f}; "
               f"on the HDD-like disk: {on_hdd['efficiency']:.2f}")  # fmt: skip
    write_result("campaign_efficiency", {"reusing": reusing, "fresh_database": fresh, "hdd": on_hdd}, verdict)
    return 0 if meets else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configurations", type=int, default=3, help="1, 2, 4, … clients")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=30, help="each run's duration")
    parser.add_argument("--scale", type=int, default=5)
    parser.add_argument("--contrast-rounds", type=int, default=1,
                        help="rounds of the contrasts: a fresh database per run, the HDD-like disk")  # fmt: skip
    args = parser.parse_args()
    return in_throwaway_database("bench_campaign", lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
