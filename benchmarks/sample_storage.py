"""How should per-second samples be stored? Rows (one per run and second, what benchlab uses)
against one array-per-column row per run, measured side by side in one process.

Measured, interleaved (A B B A ...) and repeated, medians reported:
  ingest      live appends one sample at a time, each its own transaction, as a running
              benchmark produces them (and through the ORM: RunObserver's way and update_or_create);
  one chart   a 1,000 s run's series read and serialised to JSON (the run page);
  comparison  100 runs x 1,000 samples read and serialised (the roadmap's comparison page);
  size        table + index bytes at the data set's scale.
The data set is `--runs` runs of `--seconds` samples (default 480 x 1,000: 48 configurations
x 10 repetitions of a 1,000 s run). It lives in a throw-away database (test_<name>) that is
dropped at the end.

Run with `make bench`.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import django

from benchmarks.machine import write_result
from benchmarks.throwaway import in_throwaway_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")
django.setup()

from django.db import connection  # noqa: E402 - needs django.setup()

from runs.bench.selectors.run_page import run_chart_data  # noqa: E402
from runs.bench.services.samples import sample_upsert  # noqa: E402
from runs.models import Device, Host, PgInstall, Run, RunSample  # noqa: E402

ARRAY_TABLE = """
CREATE TABLE bench_series (
    run_id integer PRIMARY KEY REFERENCES runs_run (id),
    seconds integer[] NOT NULL DEFAULT '{}',
    tps double precision[] NOT NULL DEFAULT '{}',
    latency_ms double precision[] NOT NULL DEFAULT '{}',
    warmup boolean[] NOT NULL DEFAULT '{}'
)
"""


def populate(runs: int, seconds: int) -> list[int]:
    """Runs with `seconds` samples each, in both layouts, written in bulk (not what is measured)."""
    host = Host.objects.create(name="bench-host", transport=Host.Transport.LOCAL)
    device = Device.objects.create(host=host, name="dir", kind=Device.Kind.VIRTUAL, path="/srv/bench")
    pg = PgInstall.objects.create(host=host, bin_dir="/usr/lib/postgresql/15/bin", version="15")
    spec = {"server_host": host, "device": device, "pg_install": pg, "filesystem": "directory", "state": "done"}
    ids = [run.pk for run in Run.objects.bulk_create([Run(**spec) for _ in range(runs)])]
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO runs_runsample (run_id, second, tps, latency_ms, warmup)"
            " SELECT r, s, 2000 + 300 * random(), 1 + random(), s <= 60"
            " FROM unnest(%s::int[]) AS r, generate_series(1, %s) AS s",
            [ids, seconds],
        )
        cursor.execute(ARRAY_TABLE)
        cursor.execute(
            "INSERT INTO bench_series SELECT run_id, array_agg(second ORDER BY second),"
            " array_agg(tps ORDER BY second), array_agg(latency_ms ORDER BY second),"
            " array_agg(warmup ORDER BY second) FROM runs_runsample GROUP BY run_id"
        )
        cursor.execute("VACUUM ANALYZE runs_runsample")
        cursor.execute("VACUUM ANALYZE bench_series")
    return ids


# --- reads: the same chart dictionary from either layout ---------------------------------------


def charts_from_rows(run_ids: list[int]) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT run_id, second, tps, latency_ms, warmup FROM runs_runsample"
            " WHERE run_id = ANY(%s) ORDER BY run_id, second",
            [run_ids],
        )
        charts: dict[int, dict[str, list[Any]]] = {}
        for run_id, second, tps, latency, warmup in cursor.fetchall():
            chart = charts.setdefault(run_id, {"seconds": [], "tps": [], "latency_ms": [], "warmup": []})
            chart["seconds"].append(second)
            chart["tps"].append(tps)
            chart["latency_ms"].append(latency)
            chart["warmup"].append(warmup)
    return json.dumps(charts)


def charts_from_arrays(run_ids: list[int]) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT run_id, seconds, tps, latency_ms, warmup FROM bench_series WHERE run_id = ANY(%s) ORDER BY run_id",
            [run_ids],
        )
        charts = {
            run_id: {"seconds": seconds, "tps": tps, "latency_ms": latency, "warmup": warmup}
            for run_id, seconds, tps, latency, warmup in cursor.fetchall()
        }
    return json.dumps(charts)


# The same JSON built by PostgreSQL and passed through as text: Python never touches a number.
ROWS_AS_JSON = """
SELECT coalesce(json_object_agg(run_id, chart ORDER BY run_id), '{}')::text FROM (
    SELECT run_id, json_build_object('seconds', array_agg(second ORDER BY second),
        'tps', array_agg(tps ORDER BY second), 'latency_ms', array_agg(latency_ms ORDER BY second),
        'warmup', array_agg(warmup ORDER BY second)) AS chart
    FROM runs_runsample WHERE run_id = ANY(%s) GROUP BY run_id
) AS charts
"""
ARRAYS_AS_JSON = """
SELECT coalesce(json_object_agg(run_id, json_build_object('seconds', seconds, 'tps', tps,
    'latency_ms', latency_ms, 'warmup', warmup) ORDER BY run_id), '{}')::text
FROM bench_series WHERE run_id = ANY(%s)
"""


def charts_as_json_from(query: str) -> Callable[[list[int]], str]:
    def read(run_ids: list[int]) -> str:
        with connection.cursor() as cursor:
            cursor.execute(query, [run_ids])
            return str(cursor.fetchone()[0])

    return read


def chart_through_the_selector(run_id: int) -> str:
    return json.dumps(run_chart_data(Run.objects.get(pk=run_id)))


# --- ingest: one sample per transaction (autocommit), as a live run writes them ----------------


def new_run() -> int:
    """A run to ingest into (one INSERT: noise against a thousand samples)."""
    template = Run.objects.first()
    assert template is not None
    template.pk, template.key = None, uuid.uuid4()
    template.save()
    return template.pk


def ingest_rows(samples: int) -> None:
    run_id = new_run()
    with connection.cursor() as cursor:
        for second in range(1, samples + 1):
            cursor.execute(
                "INSERT INTO runs_runsample (run_id, second, tps, latency_ms, warmup) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (run_id, second) DO UPDATE SET tps = EXCLUDED.tps, latency_ms = EXCLUDED.latency_ms",
                [run_id, second, 2000.0, 1.0, second <= 60],
            )


def ingest_arrays(samples: int) -> None:
    run_id = new_run()
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO bench_series (run_id) VALUES (%s)", [run_id])
        for second in range(1, samples + 1):
            cursor.execute(
                "UPDATE bench_series SET seconds = seconds || %s, tps = tps || %s,"
                " latency_ms = latency_ms || %s, warmup = warmup || %s WHERE run_id = %s",
                [second, 2000.0, 1.0, second <= 60, run_id],
            )


def ingest_update_or_create(samples: int) -> None:
    """update_or_create: a SELECT, then an INSERT, in a transaction with a savepoint."""
    run = Run.objects.get(pk=new_run())
    for second in range(1, samples + 1):
        RunSample.objects.update_or_create(
            run=run, second=second, defaults={"tps": 2000.0, "latency_ms": 1.0, "warmup": second <= 60}
        )


def ingest_upsert(samples: int) -> None:
    """What RunObserver.progress does: one INSERT ... ON CONFLICT per sample."""
    run = Run.objects.get(pk=new_run())
    for second in range(1, samples + 1):
        sample_upsert(RunSample(run=run, second=second, tps=2000.0, latency_ms=1.0, warmup=second <= 60))


# --- the comparison ------------------------------------------------------------------------------


def relation_bytes(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size(%s)", [table])
        return int(cursor.fetchone()[0])


def interleaved(cases: dict[str, Callable[[Any], object]], inputs: list[Any]) -> dict[str, float]:
    """Every case once per input (the same input for all cases in a round), the order
    alternating every round; the median time of each case."""
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_number, value in enumerate(inputs):
        for name in names if round_number % 2 == 0 else reversed(names):
            started = time.perf_counter()
            cases[name](value)
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=480)
    parser.add_argument("--seconds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--ingest-samples", type=int, default=1000)
    args = parser.parse_args()

    return in_throwaway_database("bench", lambda: report(args))


def report(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    ids = populate(args.runs, args.seconds)
    print(f"data set: {args.runs} runs × {args.seconds} samples, loaded in {time.perf_counter() - started:.1f} s")
    rng = random.Random(1)  # noqa: S311 - picks runs, nothing secret
    per_page = min(100, len(ids))

    one = interleaved(
        {
            "rows": lambda run_id: charts_from_rows([run_id]),
            "arrays": lambda run_id: charts_from_arrays([run_id]),
            "rows via selector": chart_through_the_selector,
        },
        [rng.choice(ids) for _ in range(args.repeat)],
    )
    hundred = interleaved(
        {
            "rows": charts_from_rows,
            "arrays": charts_from_arrays,
            "rows, JSON by PostgreSQL": charts_as_json_from(ROWS_AS_JSON),
            "arrays, JSON by PostgreSQL": charts_as_json_from(ARRAYS_AS_JSON),
        },
        [rng.sample(ids, per_page) for _ in range(args.repeat)],
    )
    same = charts_from_rows(ids[:3])
    assert json.loads(charts_as_json_from(ROWS_AS_JSON)(ids[:3])) == json.loads(same)
    assert json.loads(charts_as_json_from(ARRAYS_AS_JSON)(ids[:3])) == json.loads(same)
    n = args.ingest_samples
    ingest = interleaved(
        {
            "rows": ingest_rows,
            "arrays": ingest_arrays,
            "rows via update_or_create": ingest_update_or_create,
            "rows via sample_upsert": ingest_upsert,
        },
        [n] * max(3, args.repeat // 5),
    )
    sizes = {"rows": relation_bytes("runs_runsample"), "arrays": relation_bytes("bench_series")}

    print(f"\n{'measure (median)':<34}{'rows':>14}{'arrays':>14}{'arrays/rows':>13}")
    print(f"{'one chart, ms':<34}{one['rows'] * 1e3:>14.2f}{one['arrays'] * 1e3:>14.2f}"
          f"{one['arrays'] / one['rows']:>13.2f}")  # fmt: skip
    print(f"{'100 charts, ms':<34}{hundred['rows'] * 1e3:>14.1f}{hundred['arrays'] * 1e3:>14.1f}"
          f"{hundred['arrays'] / hundred['rows']:>13.2f}")  # fmt: skip
    print(f"{'100 charts, JSON by PostgreSQL, ms':<34}{hundred['rows, JSON by PostgreSQL'] * 1e3:>14.1f}"
          f"{hundred['arrays, JSON by PostgreSQL'] * 1e3:>14.1f}"
          f"{hundred['arrays, JSON by PostgreSQL'] / hundred['rows, JSON by PostgreSQL']:>13.2f}")  # fmt: skip
    print(f"{'live ingest, samples/s':<34}{n / ingest['rows']:>14.0f}{n / ingest['arrays']:>14.0f}"
          f"{ingest['rows'] / ingest['arrays']:>13.2f}")  # fmt: skip
    print(f"{'size, MiB':<34}{sizes['rows'] / 2**20:>14.1f}{sizes['arrays'] / 2**20:>14.1f}"
          f"{sizes['arrays'] / sizes['rows']:>13.2f}")  # fmt: skip
    print(f"\none chart through run_chart_data (ORM, rows): {one['rows via selector'] * 1e3:.2f} ms")
    for name in ("rows via update_or_create", "rows via sample_upsert"):
        print(f"live ingest, {name}: {n / ingest[name]:.0f} samples/s")
    results = {
        "data_set": {"runs": args.runs, "samples_each": args.seconds},
        "one_chart_ms": {name: seconds * 1e3 for name, seconds in one.items()},
        "hundred_charts_ms": {name: seconds * 1e3 for name, seconds in hundred.items()},
        "ingest_samples_per_s": {name: n / seconds for name, seconds in ingest.items()},
        "size_mib": {name: size / 2**20 for name, size in sizes.items()},
    }
    write_result("sample_storage", results, f"rows stay: a comparison of {per_page} runs, JSON built by PostgreSQL, in "
                 f"{hundred['rows, JSON by PostgreSQL'] * 1e3:.0f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
