"""A run's client hosts' per-second series, as its charts draw them."""

from collections.abc import Sequence
from typing import Any

from runs.models import RunClient, RunClientSample


def run_client_series(clients: Sequence[RunClient]) -> list[dict[str, Any]]:
    """Each client host's per-second series, for a run with several (the run's own series is
    their total); [] for a run with one client host or none: its series is that one's."""
    if len(clients) < 2:
        return []
    rows = RunClientSample.objects.filter(run_client__in=clients).order_by("run_client_id", "second")
    by_client: dict[int, list[tuple[int, float, float]]] = {client.pk: [] for client in clients}
    for run_client_id, second, tps, latency in rows.values_list("run_client_id", "second", "tps", "latency_ms"):
        by_client[run_client_id].append((second, tps, latency))
    return [
        {
            "name": client.host.name,
            "seconds": [second for second, _, _ in by_client[client.pk]],
            "tps": [tps for _, tps, _ in by_client[client.pk]],
            "latency_ms": [latency for _, _, latency in by_client[client.pk]],
        }
        for client in clients
    ]
