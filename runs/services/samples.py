"""Per-second samples as a running benchmark produces them: one row per run and second.

One INSERT ... ON CONFLICT per sample: a progress line seen twice (a follower that
reconnected) updates its row instead of failing. `make bench` measured this at several
thousand samples/s; update_or_create (SELECT, then INSERT, in a savepoint) managed about
1,200/s on the same machine.
"""

from runs.models import RunSample

SAMPLE_VALUE_FIELDS = ["tps", "latency_ms", "latency_stddev_ms", "failed", "lag_ms", "skipped", "warmup"]


def sample_upsert(sample: RunSample) -> None:
    RunSample.objects.bulk_create(
        [sample], update_conflicts=True, unique_fields=["run", "second"], update_fields=SAMPLE_VALUE_FIELDS
    )
