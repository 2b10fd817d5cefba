"""Read-side queries for pages: each page's data in a fixed, small number of queries."""

from typing import Any

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from runs.models import Device, Host, PgInstall, Run, RunSample


def inventory_hosts() -> QuerySet[Host]:
    """All hosts with their devices and PostgreSQL installs, in three queries."""
    return Host.objects.prefetch_related(
        Prefetch("devices", queryset=Device.objects.order_by("name")),
        Prefetch("pg_installs", queryset=PgInstall.objects.order_by("version", "block_size")),
    ).order_by("-enabled", "name")


def run_list(limit: int = 200) -> QuerySet[Run]:
    return Run.objects.select_related("server_host", "device", "pg_install", "queued_by")[:limit]


def run_with_details(run_id: int) -> Run:
    queryset = Run.objects.select_related(
        "server_host", "client_host", "device", "pg_install", "queued_by", "configuration"
    )
    return get_object_or_404(queryset.prefetch_related("transitions", "artifacts"), pk=run_id)


def run_chart_data(run: Run) -> dict[str, Any]:
    """The run's per-second series as parallel arrays, in one query (what the charts draw)."""
    rows = RunSample.objects.filter(run=run).order_by("second").values_list("second", "tps", "latency_ms", "warmup")
    seconds, tps, latency, warmup = (list(column) for column in zip(*rows, strict=True)) if rows else ([], [], [], [])
    iostat = run.metrics.get("iostat", []) if run.metrics else []
    vmstat = run.metrics.get("vmstat", []) if run.metrics else []
    return {
        "run": run.pk,
        "state": run.state,
        "warmup_s": run.warmup_s,
        "seconds": seconds,
        "tps": tps,
        "latency_ms": latency,
        "warmup": warmup,
        "iostat": {
            key: [s.get(key) for s in iostat] for key in ("util_pct", "r_await_ms", "w_await_ms", "r_per_s", "w_per_s")
        },
        "vmstat": {key: [s.get(key) for s in vmstat] for key in ("us", "sy", "wa")},
    }
