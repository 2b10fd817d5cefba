"""Server time and bytes of the pages that grow with the results: the comparison page and its
data endpoint over 100 runs x 1,000 per-second samples, the run list with 10,000 runs, and the
page (and chart data) of a run that measured for an hour. Target: < 200 ms each.

Each page is requested through Django's test client in this process (URL routing, middleware,
queries, templates: everything but the network), interleaved round by round, and the median
and 95th percentile of `--repeat` rounds are reported. The data set lives in a throw-away
database that is dropped at the end.

Run with `make bench`.
"""

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import django

from benchmarks.machine import RESULTS, machine
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402 - needs django.setup()
from django.test import Client  # noqa: E402

from runs.models import Device, Host, PgInstall, Run  # noqa: E402

TARGET_MS = 200.0
# A run's environment as the worker stores it, with the host's block devices listed (the bulk of it).
ENVIRONMENT = {
    "host": {
        "name": "lab1", "hostname": "lab1", "kernel": "6.1.0-28-amd64", "cpu_model": "Xeon", "cpu_cores": 2,
        "memory_bytes": 25769803776, "distribution": "Debian GNU/Linux 12 (bookworm)",
        "block_devices": [{"name": f"loop{i}", "size": 805306368, "rota": False, "model": None} for i in range(12)],
    },
    "device": {"name": "ssd", "model": "TEST SSD", "capacity_bytes": 805306368},
    "filesystem": {"type": "ext4", "mount_options": "rw,noatime"},
    "postgresql": {
        "version": "PostgreSQL 15.19 (Debian 15.19-0+deb12u1) on x86_64-pc-linux-gnu", "block_size": 8192,
        "wal_block_size": 8192,
        "non_default_settings": {f"setting_{i}": str(i) for i in range(25)} | {"port": "5433"},
    },
    "pgbench": {"version": "pgbench (PostgreSQL) 15.19", "host": "lab1", "command": "pgbench -P 1 ..."},
}  # fmt: skip
METRICS = {
    "latency": {f"{p}_ms": 1.5 for p in ("p50", "p90", "p95", "p99", "p999")},
    "aggregate": [{"second": s, "count": 100} for s in range(1000)],
}


def populate(compared: int, seconds: int, listed: int) -> dict[str, Any]:
    """`compared` finished runs in 10 configurations with `seconds` samples each, `listed` runs in
    all for the list, and one hour-long run; bulk-written (not what is measured)."""
    host = Host.objects.create(name="bench-host", transport=Host.Transport.LOCAL)
    devices = [
        Device.objects.create(host=host, name=f"disk{i}", kind=Device.Kind.VIRTUAL, path=f"/srv/bench{i}")
        for i in range(2)
    ]
    pg = PgInstall.objects.create(host=host, bin_dir="/usr/lib/postgresql/15/bin", version="15")

    def run(i: int, **fields: Any) -> Run:
        return Run(
            server_host=host, device=devices[i % 2], pg_install=pg, filesystem="ext4",
            mount_options=("noatime", "", "barrier=0", "nodiratime", "data=writeback")[i % 5], state="done",
            steady_tps_mean=1000.0 + i % 10, latency_avg_ms=2.0, latency_p95_ms=3.0, latency_p99_ms=4.0,
            tps=990.0, cache_hit_pct=99.0, device_util_pct=50.0,
            os_means={"iostat": {"util_pct": 50.0}, "vmstat": {"us": 10.0}},
            environment=ENVIRONMENT, metrics=METRICS, duration_s=seconds, **fields,
        )  # fmt: skip

    compared_ids = [r.pk for r in Run.objects.bulk_create([run(i) for i in range(compared)])]
    Run.objects.bulk_create([run(i) for i in range(listed - compared - 1)], batch_size=2000)
    hour = Run.objects.bulk_create([run(0, warmup_s=60)])[0].pk
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO runs_runsample (run_id, second, tps, latency_ms, warmup)"
            " SELECT r, s, 1000 + random() * 50, 2 + random(), false"
            " FROM unnest(%s::int[]) AS r, generate_series(1, %s) AS s",
            [compared_ids, seconds],
        )
        cursor.execute(
            "INSERT INTO runs_runsample (run_id, second, tps, latency_ms, warmup)"
            " SELECT %s, s, 1000 + random() * 50, 2 + random(), s <= 60 FROM generate_series(1, 3660) AS s",
            [hour],
        )
        cursor.execute(
            'INSERT INTO runs_runosseries (run_id, source, "column", "values")'
            " SELECT %s, src, col, array_agg(random() * 100) FROM generate_series(1, 3660),"
            " (VALUES ('iostat', 'util_pct'), ('iostat', 'r_await_ms'), ('iostat', 'w_await_ms'),"
            " ('iostat', 'r_per_s'), ('iostat', 'w_per_s'), ('vmstat', 'us'), ('vmstat', 'sy'), ('vmstat', 'wa'))"
            " AS c(src, col) GROUP BY src, col",
            [hour],
        )
        cursor.execute("ANALYZE")
    return {"compared": compared_ids, "hour": hour}


def interleaved(cases: dict[str, Callable[[], Any]], repeat: int) -> dict[str, dict[str, float]]:
    """Every page once per round, the order alternating every round; milliseconds and bytes."""
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    sizes: dict[str, int] = {}
    for round_number in range(repeat + 1):
        for name in names if round_number % 2 == 0 else reversed(names):
            started = time.perf_counter()
            response = cases[name]()
            elapsed = time.perf_counter() - started
            assert response.status_code == 200, (name, response.status_code, response.content[:300])
            body = b"".join(response.streaming_content) if response.streaming else response.content
            sizes[name] = len(body)
            if round_number:  # the first round warms caches and connections
                times[name].append(elapsed * 1e3)
    return {
        name: {
            "median_ms": statistics.median(values),
            "p95_ms": sorted(values)[max(0, round(0.95 * len(values)) - 1)],
            "bytes": sizes[name],
        }
        for name, values in times.items()
    }


def report(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    data = populate(args.compared, args.seconds, args.listed)
    print(f"data set: {args.compared} compared runs × {args.seconds} samples, {args.listed} runs listed, "
          f"a 1-hour run; loaded in {time.perf_counter() - started:.1f} s")  # fmt: skip
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's host name
    client = Client()
    client.force_login(User.objects.create_superuser("bench", password=None))
    runs = ",".join(map(str, data["compared"]))
    hour = data["hour"]
    results = interleaved(
        {
            "comparison page": lambda: client.get("/compare/", {"runs": runs}),
            "comparison data": lambda: client.get("/compare/data.json", {"runs": runs}),
            "comparison page, regrouped": lambda: client.get("/compare/", {"runs": runs, "group": "mount_options"}),
            "run list (10,000 runs)": lambda: client.get("/runs/"),
            "run page (1 hour)": lambda: client.get(f"/runs/{hour}/"),
            "run chart data (1 hour)": lambda: client.get(f"/runs/{hour}/samples.json"),
        },
        args.repeat,
    )
    print(f"\n{'page (server time)':<32}{'median ms':>11}{'p95 ms':>9}{'KiB':>9}  target < {TARGET_MS:.0f} ms")
    for name, figures in results.items():
        verdict = "meets" if figures["median_ms"] < TARGET_MS else "MISSES"
        median, p95, kib = figures["median_ms"], figures["p95_ms"], figures["bytes"] / 1024
        print(f"{name:<32}{median:>11.1f}{p95:>9.1f}{kib:>9.1f}  {verdict}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "page_speed.json").write_text(json.dumps({"machine": machine(), "pages": results}, indent=2) + "\n")
    return 0 if all(f["median_ms"] < TARGET_MS for f in results.values()) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compared", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=1000)
    parser.add_argument("--listed", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    return in_throwaway_database("bench_pages", lambda: report(args))


if __name__ == "__main__":
    sys.exit(main())
