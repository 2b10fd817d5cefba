"""How soon does a run's live page see a second that pgbench has just reported?

Measured end to end on the virtual lab: `--runs` real runs (RAM disk, scale 1), one per lab
host, all at once, each followed by a browser-like event-stream client on the web process. For
every progress line: the time the client received its sample, less the time pgbench wrote it
(pgbench's start epoch, which the run records, plus the line's elapsed seconds; the lab's hosts
share this machine's clock). Everything in between is what a lab engineer waits for: the
follower on the lab host (`tail`), SSH, the worker storing the sample in PostgreSQL and
publishing it to Redis, the web process, the stream. p50/p95/p99 over at least 300 samples;
target p95 < 250 ms.

Run with `make bench` (as root: it brings up a virtual lab of its own and takes it down).
"""

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

import django

from benchmarks.event_stream import run_events
from benchmarks.machine import latency_summary, write_result
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.test import Client  # noqa: E402

from benchmarks.lab_bench import bench_user, lab_worker, own_virtual_lab, registered_hosts  # noqa: E402
from runs.bench.services.runs import run_enqueue  # noqa: E402
from runs.models import Host, Run, RunState  # noqa: E402 - needs django.setup()
from runs.tests.virtual_lab import PG_BIN, VirtualLab  # noqa: E402
from runs.tests.web_server import uvicorn  # noqa: E402

TARGET_P95_MS = 250.0
HOSTS = ("lab1", "lab2", "lab3")


def bench_run(host: Host, user: User, seconds: int) -> Run:
    """A short run on the host's RAM disk, pgbench on the host itself, per-second aggregates only."""
    return Run(
        server_host=host, device=host.devices.get(name="ram"), pg_install=host.pg_installs.get(bin_dir=PG_BIN),
        filesystem="ext4", scale=1, clients=1, threads=1, duration_s=seconds, warmup_s=0, log_sampling_rate=None,
        queued_by=user,
    )  # fmt: skip


async def follow(port: int, run_id: int, cookie: str) -> dict[int, float]:
    """One run's event stream to its end: when each second's sample arrived (epoch seconds)."""
    arrived: dict[int, float] = {}
    async for kind, data in run_events(port, run_id, cookie):
        if kind == "sample":
            arrived.setdefault(json.loads(data)["second"], time.time())
    return arrived


async def follow_all(port: int, run_ids: list[int], cookie: str) -> list[dict[int, float]]:
    return list(await asyncio.gather(*(follow(port, run_id, cookie) for run_id in run_ids)))


def measure(args: argparse.Namespace) -> int:
    with own_virtual_lab() as lab:
        return measure_on(lab, args)


def measure_on(lab: VirtualLab, args: argparse.Namespace) -> int:
    hosts = registered_hosts(lab, HOSTS[: args.runs])
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    user = bench_user()
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    with lab_worker(concurrency=len(hosts)), uvicorn() as server:
        runs = [run_enqueue(run=bench_run(host, user, args.seconds)) for host in hosts]
        arrivals = asyncio.run(follow_all(server.port, [run.pk for run in runs], cookie))
    latencies = []
    for run, arrived in zip(runs, arrivals, strict=True):
        run.refresh_from_db()
        started = (run.environment.get("pgbench") or {}).get("started_epoch")
        if run.state != RunState.DONE or started is None:
            print(f"run {run.pk} ended {run.state}: {run.error}", file=sys.stderr)
            return 2
        latencies += [(received - (started + second)) * 1000 for second, received in arrived.items()]
    results: dict[str, Any] = {
        "runs": len(runs),
        "samples": len(latencies),
        "latency_ms": latency_summary(latencies),
    }
    meets = results["latency_ms"]["p95"] < TARGET_P95_MS and len(latencies) >= 300
    verdict = (f"live latency over {len(latencies)} samples: p95 {results['latency_ms']['p95']:.1f} ms "
          f"(target < {TARGET_P95_MS:.0f} ms): {'meets' if meets else 'MISSES'}")  # fmt: skip
    write_result("live_latency", results, verdict)
    return 0 if meets else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, choices=(1, 2, 3), help="runs at once, one per lab host")
    parser.add_argument("--seconds", type=int, default=110, help="each run's duration")
    args = parser.parse_args()
    return in_throwaway_database("bench_live", lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
