"""Reads of the stored change points (runs.models.watch): the regressions page and the API, in one
query whatever their number."""

from dataclasses import dataclass

from django.db.models import QuerySet

from runs.compare.metrics import METRICS, Metric
from runs.models import ChangePointState, StoredChangePoint
from runs.watch.selectors import ChangeWords

FILTERS = ("open", "acknowledged", "expected", "all")
METRIC_BY_KEY = {metric.key: metric for metric in METRICS}


@dataclass(frozen=True)
class Regression(ChangeWords):
    point: StoredChangePoint
    metric: Metric | None  # None: a metric benchlab no longer compares

    @property
    def metric_label(self) -> str:
        return self.metric.label if self.metric else self.point.metric

    @property
    def drift_lines(self) -> list[str]:
        return self.point.drift.splitlines()


def change_points(state: str = "open") -> QuerySet[StoredChangePoint]:
    """Stored change points in `state` ("all": every one), newest first."""
    found = StoredChangePoint.objects.select_related("triaged_by").order_by("-detected_at", "-pk")
    return found if state == "all" else found.filter(state=ChangePointState(state))


def regressions(state: str = "open") -> list[Regression]:
    return [Regression(point, METRIC_BY_KEY.get(point.metric)) for point in change_points(state)]


def stored_of_series(series_key: str) -> dict[str, StoredChangePoint]:
    """The series' stored change points by identity (the series page shows their triage; one query)."""
    return {point.identity: point for point in StoredChangePoint.objects.filter(series_key=series_key)}
