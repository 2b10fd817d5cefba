"""Per-second samples as a running benchmark produces them: one row per run and second.

One INSERT ... ON CONFLICT per sample: a progress line seen twice (a follower that
reconnected) updates its row instead of failing. `make bench` measured this at several
thousand samples/s; update_or_create (SELECT, then INSERT, in a savepoint) managed about
1,200/s on the same machine.
"""

from runs.models import RunClientSample, RunSample
from runs.services.db_retry import with_database_retry

SAMPLE_VALUE_FIELDS = ["tps", "latency_ms", "latency_stddev_ms", "failed", "lag_ms", "skipped", "warmup"]


def sample_upsert(sample: RunSample) -> None:
    """Store the sample, again and again while benchlab's database restarts: an upsert done
    twice leaves the same row, so a retry after an unacknowledged commit changes nothing."""

    def upsert() -> None:
        sample.pk = None  # an attempt that failed may have given it an id that was rolled back
        RunSample.objects.bulk_create(
            [sample], update_conflicts=True, unique_fields=["run", "second"], update_fields=SAMPLE_VALUE_FIELDS
        )

    with_database_retry(upsert, f"run {sample.run_id}: storing second {sample.second}")


def client_sample_upsert(run_client_id: int, second: int, tps: float, latency_ms: float) -> None:
    """One second of one client host's pgbench, stored like the run's own samples."""

    def upsert() -> None:
        sample = RunClientSample(run_client_id=run_client_id, second=second, tps=tps, latency_ms=latency_ms)
        RunClientSample.objects.bulk_create(
            [sample], update_conflicts=True, unique_fields=["run_client", "second"], update_fields=["tps", "latency_ms"]
        )

    with_database_retry(upsert, f"client {run_client_id}: storing second {second}")
