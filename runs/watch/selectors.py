"""Reads for the regression watch: every recurring configuration as a series over time
(runs.watch.series), each metric's rounds with the spread of their repetitions, its change points
(runs.watch.changepoints) and the drift on its hosts and devices between rounds (runs.compare.drift).

A round is one campaign's runs of the configuration (its repetitions give the spread), or one run
made outside campaigns; only runs that are done count. A run's series is its stored key
(Run.series_key, written when it is queued): a series' runs are an index lookup, and which series
recur is one grouped query, however many runs the lab has made. Each read is a fixed number of
queries.
"""

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any, cast

from django.db.models import BigIntegerField, Case, Count, F, Q, When
from django.db.models.functions import Coalesce

from runs.bench.spec_labels import EMPTY_VALUES, spec_value
from runs.compare.metrics import METRICS, Metric, metric_annotations
from runs.compare.selectors.drift import drift_among
from runs.compare.stats import format_p
from runs.models import Run, RunState
from runs.watch.changepoints import ChangePoint, Detection, detect
from runs.watch.drift_rounds import DriftEvent, drift_events
from runs.watch.series import TITLE_FIELDS

# What a run's metrics are read from (runs.compare.metrics), beside its specification.
METRIC_COLUMNS = (
    *("steady_tps_mean", "latency_avg_ms", "latency_p95_ms", "latency_p99_ms"),
    *("cache_hit_pct", "device_util_pct", "os_means"),
)
# A drift event is told beside a change point whose rounds it overlaps: the round a change point is
# put at is uncertain by about one, so "between 11 and 12" goes with a change between 12 and 13.


@dataclass(frozen=True)
class Round:
    number: int  # 1, 2, … in time order
    at: datetime  # when its first run started
    campaign_id: int | None  # None: a run made outside campaigns
    run_ids: tuple[int, ...]

    @property
    def ref(self) -> str:
        """Names the round for good (a stored change point's identity): "c12" (campaign 12), "r345" (run 345)."""
        return f"c{self.campaign_id}" if self.campaign_id is not None else f"r{self.run_ids[0]}"


@dataclass(frozen=True)
class Spread:
    """One round's repetitions of one metric."""

    n: int
    mean: float
    minimum: float
    maximum: float
    sd: float | None  # None for one repetition


def change_verdict(metric: Metric | None, change: float) -> str:
    """ "faster" or "slower" (by the metric's direction), or "higher" or "lower" """
    higher = change > 0
    if metric is None or metric.direction == "neutral":
        return "higher" if higher else "lower"
    return "faster" if higher == (metric.direction == "higher_is_faster") else "slower"


def change_size_text(change: float, low: float | None, high: float | None) -> str:
    """ "+5.2 % (95 % CI +3.1 to +7.4 %)" """
    if low is None or high is None:
        return f"{change * 100:+.1f} % (interval unbounded)"
    return f"{change * 100:+.1f} % (95 % CI {low * 100:+.1f} to {high * 100:+.1f} %)"


class ChangeWords:
    """A change's verdict and size in words, for what holds its metric and its point (a detected
    ChangePoint or a StoredChangePoint: both have change, change_low and change_high)."""

    metric: Metric | None
    point: Any

    @property
    def verdict(self) -> str:
        return change_verdict(self.metric, self.point.change)

    @property
    def size_text(self) -> str:
        return change_size_text(self.point.change, self.point.change_low, self.point.change_high)


@dataclass(frozen=True)
class SeriesChange(ChangeWords):
    metric: Metric
    point: ChangePoint
    round_before: Round
    round_after: Round
    identity: str  # series key : metric : the first round after it
    drift: list[DriftEvent]

    @property
    def p_text(self) -> str:
        return format_p(self.point.p)


@dataclass(frozen=True)
class MetricSeries:
    metric: Metric
    spreads: list[Spread | None]  # per round; None: no repetition of the round has the metric
    detection: Detection
    changes: list[SeriesChange]


@dataclass(frozen=True)
class SeriesDetail:
    key: str
    title: str
    rounds: list[Round]
    metrics: list[MetricSeries]  # those with a value in some round
    drift: list[DriftEvent]
    runs: int = 0
    changes: list[SeriesChange] = field(default_factory=list)  # every metric's, in round order


def _done(where: Q) -> Any:
    return Run.objects.filter(where, state=RunState.DONE, series_key__isnull=False)


def _configurations(where: Q) -> list[dict[str, Any]]:
    """The done runs `where` says: each one's id, campaign, time and series key, in time order (one query)."""
    rows = _done(where).annotate(at=Coalesce("started_at", "created_at"))
    return list(rows.order_by("at", "pk").values("pk", "campaign_id", "at", "series_key"))


# A done run's round, as rounds_of groups them: its campaign (negated, never a run's id), or itself.
_ROUND = Case(When(campaign_id__isnull=False, then=-F("campaign_id")), default=F("pk"), output_field=BigIntegerField())


def _recurring(where: Q) -> dict[str, int]:
    """Per series with two rounds or more among the done runs `where` says: its number of rounds (one query)."""
    counted = _done(where).values("series_key").annotate(rounds=Count(_ROUND, distinct=True)).filter(rounds__gte=2)
    return {row["series_key"]: row["rounds"] for row in counted}


def _by_series(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["series_key"], []).append(row)
    return found


def rounds_of(rows: Sequence[dict[str, Any]]) -> list[Round]:
    """The runs (in time order) as rounds: each campaign's together, each run outside one alone."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(("c", row["campaign_id"]) if row["campaign_id"] else ("r", row["pk"]), []).append(row)
    ordered = sorted(groups.values(), key=lambda members: (members[0]["at"], members[0]["pk"]))
    return [
        Round(i, members[0]["at"], members[0]["campaign_id"], tuple(row["pk"] for row in members))
        for i, members in enumerate(ordered, start=1)
    ]


def _measured(run_ids: Iterable[int]) -> dict[int, Run]:
    """The runs' metric columns, as attributes of a stand-in for each Run (runs.compare.metrics reads
    them off a Run): one query, and no model instances, which took a third of a 365-round page."""
    rows = Run.objects.filter(pk__in=list(run_ids)).annotate(**metric_annotations())
    fields = ("pk", *METRIC_COLUMNS, *metric_annotations())
    return {row["pk"]: cast(Run, SimpleNamespace(**row)) for row in rows.values(*fields)}


def _spread(values: list[float]) -> Spread | None:
    if not values:
        return None
    mean = math.fsum(values) / len(values)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else None
    return Spread(len(values), mean, min(values), max(values), sd)


def _detected(metric: Metric, members: Sequence[Sequence[Run]]) -> tuple[list[Spread | None], Detection]:
    """Per round (its runs): the metric's spread, and the change points of the rounds' means."""
    spreads = []
    for runs in members:
        values = [float(v) for run in runs if (v := metric.value(run)) is not None and math.isfinite(v)]
        spreads.append(_spread(values))
    return spreads, detect([s.mean if s else None for s in spreads])


def _members(rounds: Sequence[Round], measured: dict[int, Run]) -> list[list[Run]]:
    return [[measured[pk] for pk in r.run_ids] for r in rounds]


def recurring_keys() -> list[str]:
    """Every series with two rounds or more (one query; nothing detected)."""
    return sorted(_recurring(Q()))


def _with_details() -> Any:
    return Run.objects.select_related("server_host", "device__host", "pg_install", "library_script").prefetch_related(
        "run_clients__host"
    )


def series_title(run: Run) -> str:
    """ "lab1 · lab1:ssd0 · ext4 · PostgreSQL 16.4, 8 kB pages · tpcb-like · scale 10 · 8 clients · 60 s" """
    empty = set(EMPTY_VALUES.values())
    parts = [spec_value(run, name, with_label=True) for name in TITLE_FIELDS]
    return " · ".join(part for part in parts if part and part not in empty)


def _titled(run_ids: list[int]) -> dict[int, str]:
    return {run.pk: series_title(run) for run in _with_details().filter(pk__in=run_ids)}


def _changes(
    key: str, metric: Metric, detection: Detection, rounds: Sequence[Round], drift: Sequence[DriftEvent]
) -> list[SeriesChange]:
    found = []
    for point in detection.points:
        before, after = rounds[point.before_index], rounds[point.index]
        near = [e for e in drift if e.round_before <= after.number and e.round_after >= before.number]
        identity = f"{key}:{metric.key}:{after.ref}"
        found.append(SeriesChange(metric, point, before, after, identity, near))
    return found


def series_detail(key: str) -> SeriesDetail | None:
    """The series' rounds, per metric its spreads and change points, and its drift; None if no
    done run has this key. Seven queries at most: its runs, the metrics, the last run's details
    (three), the drift (two)."""
    rows = _configurations(Q(series_key=key))
    if not rows:
        return None
    rounds = rounds_of(rows)
    run_ids = [row["pk"] for row in rows]
    members = _members(rounds, _measured(run_ids))
    last = _with_details().get(pk=rows[-1]["pk"])  # a series' runs share their hosts and device
    spanned = drift_among(run_ids, {host.pk: host.name for host in last.hosts}, {last.device_id: str(last.device)})
    drift = drift_events(spanned, {pk: r.number for r in rounds for pk in r.run_ids})
    metrics, changes = [], []
    for metric in METRICS:
        spreads, detection = _detected(metric, members)
        if any(spreads):
            mine = _changes(key, metric, detection, rounds, drift)
            metrics.append(MetricSeries(metric, spreads, detection, mine))
            changes += mine
    order = {metric.key: i for i, metric in enumerate(METRICS)}
    changes.sort(key=lambda change: (change.round_after.number, order[change.metric.key]))
    return SeriesDetail(key, series_title(last), rounds, metrics, drift, len(rows), changes)


def recurring_series(runs: Sequence[Run]) -> dict[int, tuple[str, int]]:
    """Per done run among `runs`: its series' key and number of rounds, when it recurs (two rounds
    or more). One query, over the done runs of those series."""
    done = {run.pk: run.series_key for run in runs if run.state == RunState.DONE and run.series_key}
    if not done:
        return {}
    rounds = _recurring(Q(series_key__in=set(done.values())))
    return {pk: (key, rounds[key]) for pk, key in done.items() if key in rounds}


def campaign_series(campaign_id: int) -> dict[int, tuple[str, int]]:
    """Per configuration (its index) of the campaign: its series' key and number of rounds, when
    it recurs (two queries)."""
    runs = list(
        Run.objects.filter(campaign_id=campaign_id, state=RunState.DONE)
        .select_related("configuration")
        .only("pk", "state", "series_key", "configuration__index")
    )
    found = recurring_series(runs)
    return {run.configuration.index: found[run.pk] for run in runs if run.pk in found and run.configuration}


def chart_data(detail: SeriesDetail) -> dict[str, Any]:
    """What the series page's charts draw (static/js/series_detail.js)."""
    return {
        "rounds": [
            {"number": r.number, "at": r.at.isoformat(), "campaign": r.campaign_id, "runs": r.run_ids}
            for r in detail.rounds
        ],
        "drift": [{"after": e.round_after, "before": e.round_before, "text": e.text} for e in detail.drift],
        "metrics": [
            {
                "key": m.metric.key,
                "label": m.metric.label,
                "unit": m.metric.unit,
                "points": [
                    None if s is None else {"mean": s.mean, "min": s.minimum, "max": s.maximum, "n": s.n}
                    for s in m.spreads
                ],
                "changes": [{"after": c.round_after.number, "text": f"{c.verdict} {c.size_text}"} for c in m.changes],
                "reason": m.detection.reason,
            }
            for m in detail.metrics
        ],
    }
