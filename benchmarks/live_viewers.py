"""Fifty people watch one run live: does each of them get every sample, and soon?

A run's live page reads its events as server-sent events from the web process (uvicorn, as
`make run` serves it). This starts that web process on a throw-away database, connects
`--viewers` event-stream clients to one running run, each logged in as a person of their own
(fifty viewers are fifty people; one person may hold only BENCHLAB_MAX_STREAMS_PER_USER), and
publishes `--samples` sample events at `--rate` a second the way a worker does
(runs.jobs.live.publish), each stamped with when it was sent.
Reported: samples each viewer missed (target: none), publish-to-receive latency p50/p95/p99
over every viewer's every sample (target p95 < 250 ms), and the web process's CPU time, memory,
threads and connections (Redis, PostgreSQL) while it serves them and once they have left. The
stream waits on Redis in the event loop (runs.jobs.live.StreamReader) and the request keeps no thread
of its own (benchlab/asgi_handler.py), so the threads must not grow with the viewers (target:
fewer than 5 more than idle): each viewer costs a Redis connection, nothing else. The run lasts
less than a stream's maximum age (BENCHLAB_STREAM_MAX_AGE_S, 300 s): no viewer reconnects.

Run with `make bench`.
"""

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import django

from benchmarks.event_stream import run_events
from benchmarks.machine import latency_summary, write_result
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import Group, User  # noqa: E402
from django.test import Client  # noqa: E402

from runs.jobs import live  # noqa: E402
from runs.models import Device, Host, PgInstall, Run, RunState  # noqa: E402
from runs.tests.web_server import WebServer, uvicorn  # noqa: E402

TARGET_P95_MS = 250.0
MAX_EXTRA_THREADS = 5  # serving fifty viewers against idle: a few shared threads, none per viewer


def process_figures(pid: int) -> dict[str, float]:
    """CPU seconds so far, resident memory and threads of the process and its children (uvicorn's
    reloader-free server is one process, but scripts/web may exec through a shell)."""
    pids = [pid, *children(pid)]
    cpu = rss = threads = 0.0
    for each in pids:
        try:
            stat = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            cpu += (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
            status = dict(line.split(":", 1) for line in Path(f"/proc/{each}/status").read_text().splitlines())
            rss += int(status["VmRSS"].split()[0]) / 1024
            threads += int(status["Threads"])
        except (OSError, KeyError, IndexError):
            continue
    return {"cpu_s": cpu, "rss_mib": rss, "threads": threads}


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        for child in (task / "children").read_text().split():
            found += [int(child), *children(int(child))]
    return found


async def viewer(port: int, run_id: int, cookie: str, latencies: list[float], seen: set[int]) -> None:
    """One browser's EventSource, as plain HTTP/1.0 (no chunking): every sample's delay."""
    async with aclosing(run_events(port, run_id, cookie)) as events:  # closed at once when done
        async for kind, data in events:
            if kind == "sample":
                sample = json.loads(data)
                latencies.append((time.time() - sample["sent_at"]) * 1000)
                seen.add(sample["second"])
            elif kind == "state" and json.loads(data)["state"] == "done":
                break


async def watch(
    port: int, run_id: int, cookies: list[str], args: argparse.Namespace, while_serving: Callable[[], None]
) -> list[tuple[list[float], set[int]]]:
    """Every viewer's latencies and samples seen; `while_serving` is called once every sample is
    sent, while every viewer is still connected (the run is not done yet)."""
    views: list[tuple[list[float], set[int]]] = [([], set()) for _ in range(args.viewers)]
    tasks = [
        asyncio.create_task(viewer(port, run_id, cookie, *view)) for cookie, view in zip(cookies, views, strict=True)
    ]
    await asyncio.sleep(2)  # every viewer connected and waiting
    for second in range(1, args.samples + 1):
        sample = {"second": second, "tps": 1000.0, "latency_ms": 2.0, "warmup": False, "sent_at": time.time()}
        await asyncio.to_thread(live.publish, run_id, "sample", sample)
        await asyncio.sleep(1 / args.rate)
    while_serving()
    await asyncio.to_thread(live.publish, run_id, "state", {"state": "done", "label": "done", "at": ""})
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
    return views


def viewer_cookie(username: str) -> str:
    """The session cookie of a new person with the viewer role."""
    user = User.objects.create_user(username, password=None)
    user.groups.add(Group.objects.get(name="viewer"))
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def server_figures(server: WebServer) -> dict[str, float]:
    return process_figures(server.pid) | {
        "redis_connections": server.redis_connections(),
        "database_connections": server.database_connections(),
    }


def measure(args: argparse.Namespace) -> int:
    host = Host.objects.create(name="bench-host", transport=Host.Transport.LOCAL)
    device = Device.objects.create(host=host, name="disk", kind=Device.Kind.VIRTUAL, path="/srv/bench")
    pg = PgInstall.objects.create(host=host, bin_dir="/usr/lib/postgresql/15/bin", version="15")
    run = Run.objects.create(server_host=host, device=device, pg_install=pg, state=RunState.MEASURING)
    live.reset_run_stream(run.pk)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    cookies = [viewer_cookie(f"viewer{number}") for number in range(args.viewers)]
    figures: dict[str, dict[str, float]] = {}
    with uvicorn() as server:
        figures["idle"] = server_figures(server)
        started = time.monotonic()

        def while_serving() -> None:
            figures["serving"] = server_figures(server) | {"wall_s": time.monotonic() - started}

        views = asyncio.run(watch(server.port, run.pk, cookies, args, while_serving))
        time.sleep(1)  # the streams' ends reach the server
        figures["after"] = server_figures(server)
    results = summary(args, views, figures)
    web = results["web_process"]
    extra_threads = web["threads_serving"] - web["threads_idle"]
    meets = results["missed_total"] == 0 and results["latency_ms"]["p95"] < TARGET_P95_MS
    meets = meets and extra_threads < MAX_EXTRA_THREADS
    verdict = (f"{args.viewers} viewers: {results['missed_total']} samples missed, p95 "
               f"{results['latency_ms']['p95']:.1f} ms, {extra_threads:+.0f} threads serving against idle (target: "
               f"none missed, p95 < {TARGET_P95_MS:.0f} ms, fewer than {MAX_EXTRA_THREADS} more threads): "
               f"{'meets' if meets else 'MISSES'}")  # fmt: skip
    write_result("live_viewers", results, verdict)
    return 0 if meets else 1


def summary(
    args: argparse.Namespace, views: list[tuple[list[float], set[int]]], figures: dict[str, dict[str, float]]
) -> dict[str, Any]:
    idle, serving, after = figures["idle"], figures["serving"], figures["after"]
    latencies = [latency for view_latencies, _ in views for latency in view_latencies]
    return {
        "viewers": args.viewers,
        "samples": args.samples,
        "rate_per_s": args.rate,
        "missed_total": sum(args.samples - len(seen) for _, seen in views),
        "latency_ms": latency_summary(latencies),
        "web_process": {
            "cpu_pct_of_one_core": 100 * (serving["cpu_s"] - idle["cpu_s"]) / serving["wall_s"],
            "rss_mib": serving["rss_mib"],
            "rss_mib_idle": idle["rss_mib"],
            "threads_idle": idle["threads"],
            "threads_serving": serving["threads"],
            "threads_after": after["threads"],
            "redis_connections_idle": idle["redis_connections"],
            "redis_connections_serving": serving["redis_connections"],
            "redis_connections_after": after["redis_connections"],
            "database_connections_idle": idle["database_connections"],
            "database_connections_serving": serving["database_connections"],
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rate", type=float, default=10.0, help="samples a second (a run sends 1)")
    args = parser.parse_args()
    return in_throwaway_database("bench_viewers", lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
