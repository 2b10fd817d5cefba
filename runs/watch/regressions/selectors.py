"""Reads of the stored change points (runs.models.watch): the regressions page and the API, a page of
them in one query (and the count), whatever their number. By default only those the latest detection
of their series still found; the gone ones (StoredChangePoint.gone_at) on asking."""

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import QuerySet

from runs.compare.metrics import METRICS, Metric
from runs.models import ChangePointState, StoredChangePoint
from runs.watch.selectors import ChangeWords

FILTERS = ("open", "acknowledged", "expected", "all")
# Whether the latest detection of its series still found it: "yes" (the default), "no" (gone), "all".
FOUND_FILTERS = ("yes", "no", "all")
PER_PAGE = 50  # as the run list's default page
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


def change_points(state: str = "open", found: str = "yes") -> QuerySet[StoredChangePoint]:
    """Stored change points in `state` ("all": every one) that the latest detection found ("yes"),
    no longer found ("no") or either ("all"), newest first."""
    rows = StoredChangePoint.objects.select_related("triaged_by").order_by("-detected_at", "-pk")
    if state != "all":
        rows = rows.filter(state=ChangePointState(state))
    return rows if found == "all" else rows.filter(gone_at__isnull=(found == "yes"))


def regressions(points: Iterable[StoredChangePoint]) -> list[Regression]:
    return [Regression(point, METRIC_BY_KEY.get(point.metric)) for point in points]


def stored_of_series(series_key: str) -> dict[str, StoredChangePoint]:
    """The series' stored change points by identity (the series page shows their triage; one query)."""
    return {point.identity: point for point in StoredChangePoint.objects.filter(series_key=series_key)}
