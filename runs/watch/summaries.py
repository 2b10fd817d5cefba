"""The list of series (/series/, and a device's page): every configuration with two rounds or more,
a line each, read in a fixed number of queries whatever the series' lengths.

Nothing is detected here: a line's change points are those the watch stored and still finds
(runs.watch.services.detect, after each round; `manage.py watch_detect --all` for rounds that ended
before it existed). Reading and detecting every run of every series on each visit took 190 ms for
21 series and grew with every round; the series' own page detects afresh."""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Q
from django.db.models.functions import Coalesce

from runs.compare.metrics import METRICS
from runs.models import StoredChangePoint
from runs.watch.selectors import _ROUND, _done, _measured, _titled


@dataclass(frozen=True)
class SeriesSummary:
    key: str
    title: str
    rounds: int
    runs: int
    last_at: datetime
    change_points: int  # stored and still found, over every metric
    last_tps: float | None = None  # the last round's mean of the first metric (steady-state tps)


def series_list(device_id: int | None = None) -> list[SeriesSummary]:
    """Every configuration with two rounds or more (those on one device: `device_id`), the most
    recently run first (six queries: the counts, the last runs, the last rounds' runs and their
    metrics, the change points, the titles' runs with their client hosts)."""
    counted = _counted(Q(device_id=device_id) if device_id is not None else Q())
    last = _last_runs(counted)
    tps = _last_round_tps(last)
    points = _change_points(counted)
    titled = _titled([row["pk"] for row in last.values()])
    summaries = [
        SeriesSummary(key, titled[last[key]["pk"]], row["rounds"], row["runs"], row["last_at"], points.get(key, 0),
                      tps.get(key))
        for key, row in counted.items()
    ]  # fmt: skip
    return sorted(summaries, key=lambda s: s.last_at, reverse=True)


def _counted(where: Q) -> dict[str, dict[str, Any]]:
    """Per recurring series: its rounds, done runs and when its last run started (one query)."""
    rows = (
        _done(where)
        .values("series_key")
        .annotate(
            rounds=Count(_ROUND, distinct=True), runs=Count("pk"), last_at=Max(Coalesce("started_at", "created_at"))
        )
        .filter(rounds__gte=2)
    )
    return {row["series_key"]: row for row in rows}


def _last_runs(counted: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per series: its last done run's id and campaign (one query, PostgreSQL's DISTINCT ON)."""
    runs = _done(Q(series_key__in=list(counted))).annotate(at=Coalesce("started_at", "created_at"))
    rows = runs.order_by("series_key", "-at", "-pk").distinct("series_key").values("pk", "series_key", "campaign_id")
    return {row["series_key"]: row for row in rows}


def _last_round_tps(last: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Per series: the mean of its last round's first metric (the last run's campaign's runs of the
    series, or the last run alone). Two queries."""
    campaigns = {(key, row["campaign_id"]) for key, row in last.items() if row["campaign_id"] is not None}
    alone = [row["pk"] for row in last.values() if row["campaign_id"] is None]
    in_campaigns = Q(series_key__in=[key for key, _ in campaigns], campaign_id__in=[c for _, c in campaigns])
    rows = [row for row in _done(in_campaigns | Q(pk__in=alone)).values("pk", "series_key", "campaign_id")
            if row["campaign_id"] is None or (row["series_key"], row["campaign_id"]) in campaigns]  # fmt: skip
    measured = _measured(row["pk"] for row in rows)
    values: dict[str, list[float]] = {}
    for row in rows:
        value = METRICS[0].value(measured[row["pk"]])
        if value is not None and math.isfinite(value):
            values.setdefault(row["series_key"], []).append(float(value))
    return {key: math.fsum(found) / len(found) for key, found in values.items()}


def _change_points(keys: Iterable[str]) -> dict[str, int]:
    """Per series: its stored change points that the last detection still found (one query)."""
    stored = StoredChangePoint.objects.filter(series_key__in=list(keys), gone_at__isnull=True)
    return {row["series_key"]: row["n"] for row in stored.values("series_key").annotate(n=Count("pk"))}
