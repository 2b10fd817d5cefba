"""Read-side queries for pages: each page's data in a fixed, small number of queries."""

from collections.abc import Collection
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from runs.models import Device, Host, OsSource, PgInstall, Run, RunOsSeries, RunSample


def inventory_hosts() -> QuerySet[Host]:
    """All hosts with their devices and PostgreSQL installs, in three queries."""
    return Host.objects.prefetch_related(
        Prefetch("devices", queryset=Device.objects.order_by("name")),
        Prefetch("pg_installs", queryset=PgInstall.objects.order_by("version", "block_size")),
    ).order_by("-enabled", "name")


def run_with_details(run_id: int) -> Run:
    queryset = Run.objects.select_related(
        "server_host", "client_host", "device", "pg_install", "queued_by", "configuration"
    )
    return get_object_or_404(queryset.prefetch_related("transitions", "artifacts"), pk=run_id)


def run_os_series(run: Run, columns: Collection[str] | None = None) -> dict[str, dict[str, list[float | None]]]:
    """The run's iostat and vmstat columns (all, or those named), source -> column -> a value a
    sample, in one query."""
    stored = RunOsSeries.objects.filter(run=run)
    if columns is not None:
        stored = stored.filter(column__in=columns)
    series: dict[str, dict[str, list[float | None]]] = {source: {} for source in OsSource.values}
    for source, column, values in stored.order_by("source", "column").values_list("source", "column", "values"):
        series[source][column] = values
    return series


def run_chart_data(run: Run) -> dict[str, Any]:
    """The run's per-second series as parallel arrays, in two queries (what the charts draw):
    the samples, and the iostat/vmstat columns drawn."""
    rows = RunSample.objects.filter(run=run).order_by("second").values_list("second", "tps", "latency_ms", "warmup")
    seconds, tps, latency, warmup = (list(column) for column in zip(*rows, strict=True)) if rows else ([], [], [], [])
    drawn = {
        OsSource.IOSTAT.value: ("util_pct", "r_await_ms", "w_await_ms", "r_per_s", "w_per_s"),
        OsSource.VMSTAT.value: ("us", "sy", "wa"),
    }
    os_series = run_os_series(run, [column for columns in drawn.values() for column in columns])
    return {
        "run": run.pk,
        "state": run.state,
        "warmup_s": run.warmup_s,
        "seconds": seconds,
        "tps": tps,
        "latency_ms": latency,
        "warmup": warmup,
        **{
            source: {column: os_series[source].get(column, []) for column in columns}
            for source, columns in drawn.items()
        },
    }
