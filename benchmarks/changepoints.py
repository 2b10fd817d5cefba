"""The regression watch's cost: change-point detection (runs.watch.changepoints.detect) over 1,000
series of 365 rounds each, and the page of one 365-round series (target < 200 ms).

Detection: synthetic series like this lab's (round means around 1000 with 3 % noise), a quarter of
them with a +5 % step at a random round; each series timed on its own (total and per-series
median and p95), and what was found (steps found within 3 rounds, noise series flagged).

The page: one configuration run nightly for a year as a campaign of 3 repetitions (1,095 runs),
its tps stepping +5 % at round 200, the night the host's kernel changed, beside 2,000 single runs
of 20 other configurations (20 more series of 100 rounds); /series/<key>/ and /series/ through
Django's test client (routing, middleware, queries, template), median and p95 of `--repeat`
requests after one to warm up. The data set lives in a throw-away database, dropped at the end.

Run with `make bench`.
"""

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import django
import numpy as np

from benchmarks.machine import percentile, write_result
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.test import Client  # noqa: E402

from benchmarks.page_speed import ENVIRONMENT, interleaved  # noqa: E402
from runs.bench.services.runs import series_key_of  # noqa: E402
from runs.bench.specs import RunSpec  # noqa: E402
from runs.models import Campaign, Device, Host, PgInstall, Run  # noqa: E402
from runs.watch.changepoints import detect  # noqa: E402
from runs.watch.series import series_key  # noqa: E402

TARGET_MS = 200.0
ROUNDS = 365
STEP_AT = 200
START = datetime(2025, 11, 1, 2, 0, tzinfo=UTC)


def detection(series: int, rounds: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    made = []
    for i in range(series):
        means = np.full(rounds, 1000.0)
        step = int(rng.integers(20, rounds - 20)) if i % 4 == 0 else None
        if step is not None:
            means[step:] *= 1.05
        made.append((step, (means * (1 + 0.03 * rng.standard_normal(rounds))).tolist()))
    detect(made[0][1])  # imports ruptures and scipy: not what is measured
    times, found, flagged = [], 0, 0
    started = time.perf_counter()
    for step, values in made:
        begun = time.perf_counter()
        points = detect(values).points
        times.append((time.perf_counter() - begun) * 1e3)
        if step is None:
            flagged += bool(points)
        else:
            found += any(abs(p.index - step) <= 3 for p in points)
    total = time.perf_counter() - started
    stepped = sum(1 for step, _ in made if step is not None)
    return {
        "series": series,
        "rounds": rounds,
        "total_s": total,
        "median_ms": statistics.median(times),
        "p95_ms": percentile(times, 0.95),
        "steps": stepped,
        "steps_found": found,
        "noise_series": series - stepped,
        "noise_flagged": flagged,
    }


def populate(rounds: int, others: int) -> str:
    """A year of nightly campaigns of one configuration and runs of others; the series' key."""
    host = Host.objects.create(name="bench-host", transport=Host.Transport.LOCAL)
    device = Device.objects.create(host=host, name="disk0", kind=Device.Kind.VIRTUAL, path="/srv/bench0")
    pg = PgInstall.objects.create(host=host, bin_dir="/usr/lib/postgresql/15/bin", version="15")
    owner = User.objects.create_user("bench-owner")
    campaigns = Campaign.objects.bulk_create(
        Campaign(name=f"nightly {n}", base_spec={}, created_by=owner) for n in range(1, rounds + 1)
    )
    host_facts: dict[str, Any] = dict(ENVIRONMENT["host"])  # type: ignore[call-overload]  # one of its values
    new_kernel = ENVIRONMENT | {"host": host_facts | {"kernel": "6.1.0-29-amd64"}}
    rng = np.random.default_rng(34)

    def run(at: datetime, tps: float, **fields: Any) -> Run:
        environment = new_kernel if at >= START + timedelta(days=STEP_AT - 1) else ENVIRONMENT
        made = Run(
            server_host=host, device=device, pg_install=pg, filesystem="ext4", state="done", started_at=at,
            steady_tps_mean=tps, tps=tps, latency_avg_ms=2000 / tps, latency_p95_ms=3.0, latency_p99_ms=4.0,
            cache_hit_pct=99.0, device_util_pct=50.0, os_means={"vmstat": {"id": 80.0, "wa": 5.0}},
            environment=environment, **fields,
        )  # fmt: skip
        made.series_key = series_key_of(made, ())  # as queueing writes it: the watch reads series by it
        return made

    series = []
    for n, campaign in enumerate(campaigns, start=1):
        mean = 1000.0 * (1.05 if n >= STEP_AT else 1.0)
        for repetition in range(3):
            at = START + timedelta(days=n - 1, minutes=10 * repetition)
            tps = mean * (1 + 0.03 * float(rng.standard_normal()))
            series.append(run(at, tps, campaign=campaign, repetition=repetition + 1, random_seed=repetition))
    Run.objects.bulk_create(series, batch_size=2000)
    Run.objects.bulk_create(
        (run(START + timedelta(hours=i), 900.0, clients=100 + i % 20) for i in range(others)), batch_size=2000
    )
    key = series_key(RunSpec.from_run(series[0]))
    assert series[0].series_key == key, "the stored key must be the spec's"
    return key


def page(rounds: int, others: int, repeat: int) -> dict[str, Any]:
    key = populate(rounds, others)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's host name
    client = Client()
    client.force_login(User.objects.create_superuser("bench", password=None))
    detail = client.get(f"/series/{key}/").content.decode()
    assert f"between round {STEP_AT - 1} and {STEP_AT}" in detail, detail[detail.find("change-points") :][:3000]
    return interleaved(
        {
            f"series page ({rounds} rounds × 3)": lambda: client.get(f"/series/{key}/"),
            f"series list ({min(others, 20) + 1} series)": lambda: client.get("/series/"),
        },
        repeat,
    )


def report(args: argparse.Namespace) -> int:
    found = detection(args.series, args.rounds, seed=2026)
    print(
        f"detection: {found['series']} series × {found['rounds']} rounds in {found['total_s']:.1f} s, "
        f"median {found['median_ms']:.2f} ms a series (p95 {found['p95_ms']:.2f}); steps found "
        f"{found['steps_found']}/{found['steps']}, noise flagged {found['noise_flagged']}/{found['noise_series']}"
    )
    pages = page(args.rounds, args.others, args.repeat)
    results = {"detection": found, "pages": pages}
    meets = all(figures["median_ms"] < TARGET_MS for figures in pages.values())
    write_result("changepoints", results, f"pages {'meet' if meets else 'MISS'} the target of {TARGET_MS:.0f} ms")
    return 0 if meets else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--others", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    return in_throwaway_database("bench_changepoints", lambda: report(args))


if __name__ == "__main__":
    sys.exit(main())
