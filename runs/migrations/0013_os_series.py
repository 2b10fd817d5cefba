"""The iostat and vmstat series move out of Run.metrics into RunOsSeries (an array per column),
and each run gets the small figures lists and comparisons read: device_util_pct, cache_hit_pct
and os_means (issue 11: list pages must not load per-run JSON blobs).

The arithmetic is frozen here rather than imported from runs.services.os_series: an applied
migration must not change when the service does later.

Reversible: going back rebuilds metrics["iostat"] and metrics["vmstat"] as a dict per sample
from the arrays. The per-sample timestamps and iostat's device name do not come back (no reader
used them; the raw iostat.txt and vmstat.txt outputs of each run still have them).
"""

import statistics
from typing import Any

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models

SOURCES = ("iostat", "vmstat")
MEAN_COLUMNS = {
    "iostat": ("util_pct", "r_await_ms", "w_await_ms", "r_per_s", "w_per_s"),
    "vmstat": ("us", "sy", "wa", "id"),
}
NOT_SERIES = {"timestamp", "device"}
BATCH = 200


def _columns(samples: list[dict[str, Any]]) -> dict[str, list[float | None]]:
    """The samples turned around, a list per numeric field, in the order the samples name them."""
    names = [name for name in (samples[0] if samples else {}) if name not in NOT_SERIES]
    return {name: [_number(sample.get(name)) for sample in samples] for name in names}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _batches(ids: list[int]) -> list[list[int]]:
    return [ids[start : start + BATCH] for start in range(0, len(ids), BATCH)]


def _mean(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.fmean(present) if present else None


def move_series_out_of_metrics(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("runs", "Run")
    RunOsSeries = apps.get_model("runs", "RunOsSeries")
    with_results = Run.objects.filter(metrics__has_any_keys=[*SOURCES, "cache_hit_ratio"])
    ids = list(with_results.order_by("pk").values_list("pk", flat=True))
    for batch in _batches(ids):
        runs = list(Run.objects.filter(pk__in=batch).only("pk", "metrics"))
        rows = []
        for run in runs:
            by_source = {source: _columns(run.metrics.pop(source, None) or []) for source in SOURCES}
            rows += [
                RunOsSeries(run=run, source=source, column=name, values=values)
                for source, columns in by_source.items()
                for name, values in columns.items()
            ]
            run.os_means = {
                source: {name: _mean(by_source[source].get(name, [])) for name in names}
                for source, names in MEAN_COLUMNS.items()
            }
            run.device_util_pct = run.os_means["iostat"]["util_pct"]
            ratio = run.metrics.get("cache_hit_ratio")
            run.cache_hit_pct = ratio * 100 if isinstance(ratio, int | float) else None
        RunOsSeries.objects.bulk_create(rows)
        Run.objects.bulk_update(runs, ["metrics", "os_means", "device_util_pct", "cache_hit_pct"])


def put_series_back_into_metrics(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("runs", "Run")
    RunOsSeries = apps.get_model("runs", "RunOsSeries")
    ids = list(RunOsSeries.objects.order_by("run_id").values_list("run_id", flat=True).distinct())
    for batch in _batches(ids):
        series: dict[int, dict[str, dict[str, list[float | None]]]] = {pk: {} for pk in batch}
        stored = RunOsSeries.objects.filter(run_id__in=batch).order_by("id")
        for run_id, source, column, values in stored.values_list("run_id", "source", "column", "values"):
            series[run_id].setdefault(source, {})[column] = values
        runs = list(Run.objects.filter(pk__in=batch).only("pk", "metrics"))
        for run in runs:
            for source, columns in series[run.pk].items():
                count = max(len(values) for values in columns.values())
                run.metrics[source] = [
                    {name: values[i] for name, values in columns.items()} | {"timestamp": None} for i in range(count)
                ]
        Run.objects.bulk_update(runs, ["metrics"])


class Migration(migrations.Migration):
    dependencies = [("runs", "0012_share_links")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="cache_hit_pct",
            field=models.FloatField(blank=True, null=True, verbose_name="cache hit ratio (%)"),
        ),
        migrations.AddField(
            model_name="run",
            name="device_util_pct",
            field=models.FloatField(blank=True, null=True, verbose_name="device utilisation (%)"),
        ),
        migrations.AddField(
            model_name="run",
            name="os_means",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.CreateModel(
            name="RunOsSeries",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("source", models.CharField(choices=[("iostat", "iostat"), ("vmstat", "vmstat")], max_length=10)),
                ("column", models.CharField(max_length=30)),
                (
                    "values",
                    django.contrib.postgres.fields.ArrayField(base_field=models.FloatField(null=True), size=None),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="os_series", to="runs.run"
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "run OS series",
                "ordering": ["run", "source", "column"],
                "constraints": [
                    models.UniqueConstraint(fields=("run", "source", "column"), name="runosseries_one_per_column")
                ],
            },
        ),
        migrations.RunPython(move_series_out_of_metrics, put_series_back_into_metrics),
    ]
