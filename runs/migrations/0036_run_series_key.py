# Written for benchlab (Django 5.2.19) on 2026-11-28.
"""Run.series_key, stored, and every existing run's filled in by the same rules as a new run's
(runs.watch.series.series_key over the spec read as values, runs.watch.series.spec_of_row); a change
point no longer found (StoredChangePoint.gone_at)."""

from collections import defaultdict
from typing import Any

from django.db import migrations, models

BATCH = 5000


def _client_ids(RunClient: Any, run_ids: list[int]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = defaultdict(list)
    rows = RunClient.objects.filter(run_id__in=run_ids).order_by("run_id", "position")
    for run_id, host_id in rows.values_list("run_id", "host_id"):
        found[run_id].append(host_id)
    return found


def backfill_series_keys(apps: Any, schema_editor: Any) -> None:
    """Each run's key from its columns and client hosts as the database holds them; runs of one key
    written by one UPDATE per key and batch (a lab's runs share a few hundred configurations)."""
    from runs.bench.specs import CLIENTS, MODEL_FIELDS
    from runs.watch.series import series_key, spec_of_row

    Run = apps.get_model("runs", "Run")
    RunClient = apps.get_model("runs", "RunClient")
    ids = list(Run.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        clients = _client_ids(RunClient, batch)
        by_key: dict[str, list[int]] = defaultdict(list)
        for row in Run.objects.filter(pk__in=batch).values("pk", *MODEL_FIELDS):
            row[CLIENTS] = clients.get(row["pk"], [])
            by_key[series_key(spec_of_row(row))].append(row["pk"])
        for key, pks in by_key.items():
            Run.objects.filter(pk__in=pks).update(series_key=key)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0037_device_health_pending"),  # main put 0037 after 0035 first: one line of migrations
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="series_key",
            field=models.CharField(blank=True, db_index=True, editable=False, max_length=16, null=True),
        ),
        migrations.AddField(
            model_name="storedchangepoint",
            name="gone_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill_series_keys, migrations.RunPython.noop),
    ]
