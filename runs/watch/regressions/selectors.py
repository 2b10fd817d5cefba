"""Reads of the stored change points (runs.models.watch): the regressions page and the API, in one
query whatever their number."""

from dataclasses import dataclass

from django.db.models import QuerySet

from runs.compare.metrics import METRICS, Metric
from runs.models import ChangePointState, StoredChangePoint

FILTERS = ("open", "acknowledged", "expected", "all")
METRIC_BY_KEY = {metric.key: metric for metric in METRICS}


@dataclass(frozen=True)
class Regression:
    point: StoredChangePoint
    metric: Metric | None  # None: a metric benchlab no longer compares

    @property
    def metric_label(self) -> str:
        return self.metric.label if self.metric else self.point.metric

    @property
    def verdict(self) -> str:
        higher = self.point.change > 0
        if self.metric is None or self.metric.direction == "neutral":
            return "higher" if higher else "lower"
        return "faster" if higher == (self.metric.direction == "higher_is_faster") else "slower"

    @property
    def size_text(self) -> str:
        """ "+9.8 % ± 1.0" (half the 95 % interval's width), or "(interval unbounded)" """
        point = self.point
        if point.change_low is None or point.change_high is None:
            return f"{point.change * 100:+.1f} % (interval unbounded)"
        return (
            f"{point.change * 100:+.1f} % (95 % CI {point.change_low * 100:+.1f} to {point.change_high * 100:+.1f} %)"
        )

    @property
    def drift_lines(self) -> list[str]:
        return self.point.drift.splitlines()


def change_points(state: str = "open") -> QuerySet[StoredChangePoint]:
    """Stored change points in `state` ("all": every one), newest first."""
    found = StoredChangePoint.objects.select_related("triaged_by").order_by("-detected_at", "-pk")
    return found if state == "all" else found.filter(state=ChangePointState(state))


def regressions(state: str = "open") -> list[Regression]:
    return [Regression(point, METRIC_BY_KEY.get(point.metric)) for point in change_points(state)]
