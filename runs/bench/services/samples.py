"""Per-second samples as a running benchmark produces them: one row per run and second.

One INSERT ... ON CONFLICT per sample: a progress line seen twice (a follower that
reconnected) updates its row instead of failing. update_or_create (SELECT, then INSERT, in a
savepoint) managed about 1,200/s on the `make bench` machine. The statement is sent as it is,
in the connection's autocommit: bulk_create(update_conflicts=True) wrapped the same INSERT in
BEGIN ... COMMIT (four round trips instead of one) and compiled it anew for every sample, which
doubled the worker's CPU a sample. With 40 runs at once on two cores (benchmarks/ingest.py,
interleaved) that held ingest below 1,500 samples/s; this reaches 1,750 to 2,000.
Each sample is still committed on its own before it is published: a worker that dies loses
no sample it has shown.
"""

from typing import Any

from django.db import connection, models

from runs.common.db_retry import with_database_retry
from runs.models import RunClientSample, RunSample, RunWarmupSample

SAMPLE_VALUE_FIELDS = [
    "tps", "latency_ms", "latency_stddev_ms", "failed", "lag_ms", "skipped", "warmup", "qps", "latency_p95_ms",
]  # fmt: skip
CLIENT_SAMPLE_VALUE_FIELDS = ["tps", "latency_ms"]


def upsert_statement(model: type[models.Model], unique_fields: list[str], value_fields: list[str]) -> str:
    """INSERT of unique_fields + value_fields (in that order) that updates the value fields of
    the row already there."""
    quote = connection.ops.quote_name
    column = {field.name: quote(field.column) for field in model._meta.concrete_fields}
    unique, values = [column[name] for name in unique_fields], [column[name] for name in value_fields]
    return (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(unique + values)})"  # noqa: S608 - names from the model
        f" VALUES ({', '.join(['%s'] * (len(unique) + len(values)))})"
        f" ON CONFLICT ({', '.join(unique)}) DO UPDATE SET {', '.join(f'{c} = EXCLUDED.{c}' for c in values)}"
    )


SAMPLE_UPSERT = upsert_statement(RunSample, ["run", "second"], SAMPLE_VALUE_FIELDS)
CLIENT_SAMPLE_UPSERT = upsert_statement(RunClientSample, ["run_client", "second"], CLIENT_SAMPLE_VALUE_FIELDS)
WARMUP_SAMPLE_UPSERT = upsert_statement(RunWarmupSample, ["run", "second"], CLIENT_SAMPLE_VALUE_FIELDS)


def _execute(statement: str, params: list[Any]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def sample_upsert(sample: RunSample) -> None:
    """Store the sample, again and again while benchlab's database restarts: an upsert done
    twice leaves the same row, so a retry after an unacknowledged commit changes nothing."""
    params = [sample.run_id, sample.second, *(getattr(sample, name) for name in SAMPLE_VALUE_FIELDS)]
    with_database_retry(lambda: _execute(SAMPLE_UPSERT, params), f"run {sample.run_id}: storing second {sample.second}")


def client_sample_upsert(run_client_id: int, second: int, tps: float, latency_ms: float) -> None:
    """One second of one client host's pgbench, stored like the run's own samples."""
    params: list[Any] = [run_client_id, second, tps, latency_ms]
    what = f"client {run_client_id}: storing second {second}"
    with_database_retry(lambda: _execute(CLIENT_SAMPLE_UPSERT, params), what)


def warmup_sample_upsert(run_id: int, second: int, tps: float, latency_ms: float) -> None:
    """One second of the run's separate warm-up pgbench (RunWarmupSample), stored like the others."""
    params: list[Any] = [run_id, second, tps, latency_ms]
    what = f"run {run_id}: storing warm-up second {second}"
    with_database_retry(lambda: _execute(WARMUP_SAMPLE_UPSERT, params), what)
