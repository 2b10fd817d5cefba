"""Read-side queries for pages: each page's data in a fixed, small number of queries."""

from django.db.models import Prefetch, QuerySet

from runs.models import Device, Host, PgInstall


def inventory_hosts() -> QuerySet[Host]:
    """All hosts with their devices and PostgreSQL installs, in three queries."""
    return Host.objects.prefetch_related(
        Prefetch("devices", queryset=Device.objects.order_by("name")),
        Prefetch("pg_installs", queryset=PgInstall.objects.order_by("version", "block_size")),
    ).order_by("-enabled", "name")
