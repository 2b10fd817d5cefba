"""Reads for the regression watch: every recurring configuration as a series over time
(runs.watch.series), each metric's rounds with the spread of their repetitions, its change points
(runs.watch.changepoints) and the drift on its hosts and devices between rounds (runs.compare.drift).

A round is one campaign's runs of the configuration (its repetitions give the spread), or one run
made outside campaigns; only runs that are done count. Keys are computed here from the runs'
specifications, not stored: every done run is read with a fingerprint of its specification, and
each distinct specification once, to find a series' runs. A stored key (a column, migration
0034_watch) would make that an index lookup once the lab has many tens of thousands of runs. Each
read is a fixed number of queries.
"""

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any, cast

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import CharField, Func, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast, Coalesce

from runs.bench.spec_labels import EMPTY_VALUES, spec_value
from runs.bench.specs import CLIENTS, MODEL_FIELDS, PARAMS, PER_RUN_FIELDS
from runs.compare.metrics import METRICS, Metric, metric_annotations
from runs.compare.selectors.drift import SpannedChange, drift_among
from runs.compare.stats import format_p
from runs.models import Run, RunClient, RunState
from runs.watch.changepoints import ChangePoint, Detection, detect
from runs.watch.series import TITLE_FIELDS, series_key, spec_of_row

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


@dataclass(frozen=True)
class DriftEvent:
    round_before: int  # the last round that saw the old value
    round_after: int  # the first that saw the new one
    text: str  # "lab1: kernel changed from A to B between round 11 and 12"


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
class SeriesSummary:
    key: str
    title: str
    rounds: int
    runs: int
    last_at: datetime
    change_points: int  # over every metric
    last_tps: float | None = None  # the last round's mean of the first metric (steady-state tps)


@dataclass(frozen=True)
class SeriesDetail:
    key: str
    title: str
    rounds: list[Round]
    metrics: list[MetricSeries]  # those with a value in some round
    drift: list[DriftEvent]
    runs: int = 0
    changes: list[SeriesChange] = field(default_factory=list)  # every metric's, in round order


# A run's specification as _configurations reads it: its columns but the seed's (each run's own),
# the parameters as JSON text and the client hosts in order.
SPEC_COLUMNS = tuple(name for name in MODEL_FIELDS if name not in (PARAMS, *PER_RUN_FIELDS))


class _Fingerprint(Func):
    """md5 of a row of the given values as PostgreSQL writes it (each value quoted as needed): equal
    for equal specifications, so each distinct one is read and keyed once. Not the series key,
    which is runs.watch.series's alone: this only groups identical rows."""

    template = "md5(ROW(%(expressions)s)::text)"
    output_field = CharField()


def _with_specs(runs: QuerySet[Run]) -> QuerySet[Run]:
    clients = RunClient.objects.filter(run=OuterRef("pk")).order_by("position").values("host_id")
    return runs.annotate(client_ids=ArraySubquery(clients), params_text=Cast(PARAMS, TextField()))


def _configurations(where: Q | None = None) -> list[dict[str, Any]]:
    """Every done run's (or those `where` says) id, campaign, time and series key, in time order.
    Two queries: the runs with a fingerprint of their specification, then one run of each distinct
    specification (a year of nightly runs of 20 configurations is 20 specifications to key)."""
    runs = _with_specs(Run.objects.filter(where or Q(), state=RunState.DONE))
    runs = runs.annotate(
        at=Coalesce("started_at", "created_at"), fingerprint=_Fingerprint(*SPEC_COLUMNS, "params_text", "client_ids")
    )
    rows = list(runs.order_by("at", "pk").values("pk", "campaign_id", "at", "fingerprint"))
    one_each = {row["fingerprint"]: row["pk"] for row in rows}
    keys = {}
    for spec in _with_specs(Run.objects.filter(pk__in=one_each.values())).values(
        "pk", *SPEC_COLUMNS, "params_text", "client_ids"
    ):
        spec |= {PARAMS: json.loads(spec["params_text"]), CLIENTS: spec["client_ids"]} | dict.fromkeys(PER_RUN_FIELDS)
        keys[spec["pk"]] = series_key(spec_of_row(spec))
    return [row | {"key": keys[one_each[row["fingerprint"]]]} for row in rows]


def _by_series(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["key"], []).append(row)
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


def series_list(device_id: int | None = None) -> list[SeriesSummary]:
    """Every configuration with two rounds or more (those on one device: `device_id`), the most
    recently run first (six queries at most: the specifications, the metrics, the titles' runs
    with their client hosts)."""
    recurring = []
    where = Q(device_id=device_id) if device_id is not None else None
    for key, rows in _by_series(_configurations(where)).items():
        rounds = rounds_of(rows)
        if len(rounds) >= 2:
            recurring.append((key, rows, rounds))
    measured = _measured(row["pk"] for _, rows, _ in recurring for row in rows)
    titled = _titled([rows[-1]["pk"] for _, rows, _ in recurring])
    summaries = []
    for key, rows, rounds in recurring:
        members = _members(rounds, measured)
        detected = [_detected(metric, members) for metric in METRICS]
        points = sum(len(detection.points) for _, detection in detected)
        last = detected[0][0][-1]
        title = titled[rows[-1]["pk"]]
        summaries.append(
            SeriesSummary(key, title, len(rounds), len(rows), rounds[-1].at, points, last.mean if last else None)
        )
    return sorted(summaries, key=lambda s: s.last_at, reverse=True)


def recurring_keys() -> list[str]:
    """Every series with two rounds or more (two queries; nothing detected)."""
    return [key for key, rows in _by_series(_configurations()).items() if len(rounds_of(rows)) >= 2]


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


def _round_at(rounds: Sequence[Round], at: datetime) -> int:
    """The number of the last round that started at or before `at` (0: none)."""
    return sum(1 for r in rounds if r.at <= at)


def _drift_events(spanned: Sequence[SpannedChange], rounds: Sequence[Round]) -> list[DriftEvent]:
    events = []
    for found in spanned:
        before = _round_at(rounds, found.change.before.at)
        after = next((r.number for r in rounds if r.at >= found.change.after.at), len(rounds))
        if before:
            between = f"round {before} and {after}" if after == before + 1 else f"rounds {before} and {after}"
            events.append(DriftEvent(before, after, found.said_between(between)))
    return sorted(events, key=lambda e: (e.round_before, e.text))


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
    done run has this key. Eight queries at most: the specifications (two), the metrics, the last
    run's details (three), the drift (two)."""
    rows = _by_series(_configurations()).get(key)
    if not rows:
        return None
    rounds = rounds_of(rows)
    run_ids = [row["pk"] for row in rows]
    members = _members(rounds, _measured(run_ids))
    last = _with_details().get(pk=rows[-1]["pk"])  # a series' runs share their hosts and device
    spanned = drift_among(run_ids, {host.pk: host.name for host in last.hosts}, {last.device_id: str(last.device)})
    drift = _drift_events(spanned, rounds)
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


# Columns in every series key that are cheap to filter on: a run's series is among the done runs
# that share them, so a run's or a campaign's page reads only those.
NARROWING = ("server_host_id", "device_id", "pg_install_id", "workload")


def recurring_series(runs: Sequence[Run]) -> dict[int, tuple[str, int]]:
    """Per done run among `runs`: its series' key and number of rounds, when it recurs (two rounds
    or more). Two queries, over the done runs on the same hosts, devices, installs and workloads."""
    done = [run for run in runs if run.state == RunState.DONE]
    if not done:
        return {}
    where = Q(**{f"{name}__in": {getattr(run, name) for run in done} for name in NARROWING})
    found = {}
    for key, rows in _by_series(_configurations(where)).items():
        rounds = rounds_of(rows)
        if len(rounds) >= 2:
            found.update({row["pk"]: (key, len(rounds)) for row in rows})
    return {run.pk: found[run.pk] for run in done if run.pk in found}


def campaign_series(campaign_id: int) -> dict[int, tuple[str, int]]:
    """Per configuration (its index) of the campaign: its series' key and number of rounds, when
    it recurs (three queries)."""
    runs = list(
        Run.objects.filter(campaign_id=campaign_id, state=RunState.DONE)
        .select_related("configuration")
        .only("pk", "state", "configuration__index", *NARROWING)
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
