"""Comparisons of any set of runs: grouped into configurations by their specification (or by the
fields the user chose), each metric summarised per group and compared with a baseline group
(runs.compare.stats), with what differs between the groups (runs.compare.differences) and what changed on the
runs' hosts and devices between them (runs.compare.selectors.drift).

The page, its data endpoint, the API, the exports and shared pages all build their numbers here,
so they cannot disagree. Reads only; a fixed number of queries whatever the number of runs.
"""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from runs.bench.filters import RunFilter
from runs.bench.specs import run_spec_value
from runs.common.params import BadParameter
from runs.compare.confounds import Confound, comparison_warnings, group_confounds, marker_text, marker_title
from runs.compare.differences import Difference, environment_annotations, what_differs
from runs.compare.metrics import METRICS, Metric, metric_annotations
from runs.compare.query import MAX_RUNS, MAX_SHOWN, ComparisonQuery, Group, group_label, group_shown, group_value
from runs.compare.selectors.drift import SpannedChange, comparison_drift
from runs.compare.stats import Comparison, Summary, compare, summarise
from runs.models import Campaign, Run, RunSample

PERCENTILES = ("p50", "p90", "p95", "p99", "p999")
IOSTAT_MEANS = ("util_pct", "r_await_ms", "w_await_ms", "r_per_s", "w_per_s")
VMSTAT_MEANS = ("us", "sy", "wa")


@dataclass(frozen=True)
class Row:
    group: Group
    summary: Summary
    values: list[tuple[int, float]]  # (run id, value) of each finished run
    comparison: Comparison | None  # None for the baseline
    failed: int
    confounds: tuple[Confound, ...] = ()  # what its verdict mixes in besides the grouping (runs.compare.confounds)

    @property
    def marker(self) -> str:
        return marker_text(self.confounds)

    @property
    def marker_title(self) -> str:
        return marker_title(self.confounds)


@dataclass(frozen=True)
class MetricTable:
    metric: Metric
    rows: list[Row]


@dataclass(frozen=True)
class ComparisonResult:
    query: ComparisonQuery
    title: str
    description: str
    runs: list[Run]
    groups: list[Group]
    baseline: Group
    facets: list[str]
    common: list[tuple[str, str]]  # spec fields with one value for every run: (label, value)
    tables: list[MetricTable]
    differences: list[Difference]
    warnings: list[str]
    # Changes on the runs' hosts or devices (kernel, firmware, ...) with compared runs on both sides.
    drift: list[SpannedChange]

    @property
    def run_ids(self) -> tuple[int, ...]:
        return tuple(run.pk for run in self.runs)

    @property
    def share_params(self) -> dict[str, str]:
        """The query a share link keeps: a filtered comparison's runs by id (later runs that the
        filters would list are not what was shared)."""
        query = self.query.pinned(self.run_ids) if self.query.filters else self.query
        return query.as_params()


def load_runs(query: ComparisonQuery) -> tuple[list[Run], Campaign | None]:
    """The compared runs, in a fixed order (by campaign configuration, then id); BadParameter
    names the ids that do not exist."""
    campaign = None
    runs = (
        Run.objects.select_related(
            "server_host",
            "device__host",
            "pg_install__host",
            "pg_install__build",
            "configuration",
            "campaign",
            "library_script",
        )
        .prefetch_related("run_clients__host")
        .defer("summary", "metrics", "environment", "failed_output", "failed_command")
    )
    runs = runs.annotate(**environment_annotations(), **metric_annotations())
    runs = runs.annotate(
        **{f"latency_{name}": Cast(KT(f"metrics__latency__{name}_ms"), FloatField()) for name in PERCENTILES}
    )
    if query.filters:
        found = list(runs.filter(pk__in=filtered_run_ids(query)))
        campaign = found[0].campaign if query.campaign_id is not None and found else None
    elif query.campaign_id is not None:
        campaign = Campaign.objects.filter(pk=query.campaign_id).first()
        if campaign is None:
            raise BadParameter(f"there is no campaign {query.campaign_id}")
        found = list(runs.filter(campaign=campaign))
    else:
        found = list(runs.filter(pk__in=query.run_ids))
        missing = sorted(set(query.run_ids) - {run.pk for run in found})
        if missing:
            raise BadParameter(f"there is no run {', '.join(map(str, missing[:10]))}")
    found.sort(key=lambda run: (run.campaign_id or 0, run.configuration.index if run.configuration else -1, run.pk))
    for run in found:  # the one spec field that is no column, as an attribute like the others
        run.client_host_ids = run_spec_value(run, "client_host_ids")  # type: ignore[attr-defined]
    return found, campaign


def _filtered(query: ComparisonQuery) -> str:
    return f" listed by {', '.join(f'{name}={value}' for name, value in query.filters)}" if query.filters else ""


def filtered_run_ids(query: ComparisonQuery) -> list[int]:
    """The ids of the runs the query's filters list (its campaign's, if it names one), as the run
    list chooses them; BadParameter names a filter that cannot be used, or too many runs."""
    given = dict(query.filters) | ({"campaign": str(query.campaign_id)} if query.campaign_id is not None else {})
    chosen = RunFilter(given, queryset=Run.objects.order_by("pk"))
    if not chosen.is_valid():
        name, errors = next(iter(chosen.errors.items()))
        raise BadParameter(f"{name}: {errors[0]}" if name != "__all__" else errors[0])
    ids = list(chosen.qs.values_list("pk", flat=True)[: MAX_RUNS + 1])
    if not ids:
        raise BadParameter("no run matches these filters")
    if len(ids) > MAX_RUNS:
        raise BadParameter(f"these filters match more than {MAX_RUNS} runs, which is more than a comparison takes")
    return ids


def build_groups(runs: Sequence[Run], query: ComparisonQuery) -> tuple[list[Group], list[tuple[str, str]]]:
    """Runs with equal values of the grouping fields form a group, in order of first appearance.
    A group is labelled by the grouping fields that differ between groups; the others, with one
    value for every run, are returned as what the runs have in common."""
    by_key: dict[tuple[Any, ...], list[Run]] = {}
    for run in runs:
        by_key.setdefault(tuple(group_value(run, name) for name in query.grouping), []).append(run)
    varying = [
        name
        for position, name in enumerate(query.grouping)
        if len({key[position] for key in by_key}) > 1 and name != query.facet
    ]
    common = [
        (group_label(name), group_shown(runs[0], name))
        for name in query.grouping
        if name not in varying and name != query.facet and runs
    ]
    groups = []
    for index, (key, members) in enumerate(by_key.items()):
        first = members[0]
        label = " · ".join(filter(None, (group_shown(first, name, with_label=True) for name in varying))) or "all runs"
        facet = group_shown(first, query.facet, with_label=True) if query.facet else None
        groups.append(Group(index=index, key=key, label=label, facet=facet, runs=members))
    return groups, common


def metric_tables(
    groups: Sequence[Group], baseline: Group, differences: Sequence[Difference] = ()
) -> list[MetricTable]:
    """Per metric with a value in any group: a row per group, compared with the baseline, with
    what its comparison mixes in besides the grouping."""
    confounds = {g.index: tuple(group_confounds(differences, g.index, baseline.index)) for g in groups}
    tables = []
    for metric in METRICS:
        values = {g.index: [(run.pk, v) for run in g.done if (v := metric.value(run)) is not None] for g in groups}
        if not any(values.values()):
            continue
        numbers = {index: [v for _, v in pairs] for index, pairs in values.items()}
        others = {index: vs for index, vs in numbers.items() if index != baseline.index}
        comparisons = compare(numbers[baseline.index], others, metric.direction)
        rows = [
            Row(
                g,
                summarise(numbers[g.index]),
                values[g.index],
                comparisons.get(g.index),
                len(g.failed),
                confounds[g.index],
            )
            for g in groups
        ]
        tables.append(MetricTable(metric, rows))
    return tables


def compare_runs(query: ComparisonQuery) -> ComparisonResult:
    """The whole comparison the page shows; BadParameter for runs or options it cannot use."""
    runs, campaign = load_runs(query)
    if not runs:
        raise BadParameter("the campaign has no runs yet")
    groups, common = build_groups(runs, query)
    if query.baseline >= len(groups):
        raise BadParameter(f"baseline must be a group number from 0 to {len(groups) - 1}, not {query.baseline}")
    baseline = groups[query.baseline]
    differences = what_differs(groups, query.grouping)
    return ComparisonResult(
        query=query,
        title=campaign.name if campaign else f"Comparison of {len(runs)} runs{_filtered(query)}",
        description=campaign.description if campaign else "",
        runs=runs,
        groups=groups,
        baseline=baseline,
        facets=list(dict.fromkeys(g.facet for g in groups if g.facet is not None)),
        common=common,
        tables=metric_tables(groups, baseline, differences),
        differences=differences,
        warnings=comparison_warnings(differences, groups),
        drift=comparison_drift(runs),
    )


def shown_runs(result: ComparisonResult) -> list[Run]:
    """The runs whose per-second series are overlaid: those asked for, else the first finished
    run of each group."""
    by_id = {run.pk: run for run in result.runs}
    if result.query.show:
        unknown = [str(pk) for pk in result.query.show if pk not in by_id]
        if unknown:
            raise BadParameter(f"show names run {', '.join(unknown)}, which is not among the compared runs")
        return [by_id[pk] for pk in result.query.show]
    firsts = [g.done[0] for g in result.groups if g.done]
    return firsts[:MAX_SHOWN]


def series(runs: Sequence[Run], group_of: dict[int, Group]) -> list[dict[str, Any]]:
    """Per-second tps and latency of the runs, in one query."""
    columns: dict[int, dict[str, list[Any]]] = {run.pk: {"seconds": [], "tps": [], "latency_ms": []} for run in runs}
    rows = (
        RunSample.objects.filter(run_id__in=list(columns))
        .order_by("run_id", "second")
        .values_list("run_id", "second", "tps", "latency_ms")
    )
    for run_id, second, tps, latency in rows:
        column = columns[run_id]
        column["seconds"].append(second)
        column["tps"].append(tps)
        column["latency_ms"].append(latency)
    return [
        {
            "run": run.pk,
            "group": group_of[run.pk].index,
            "label": f"run {run.pk} · {group_of[run.pk].label}",
            "warmup_s": run.warmup_s,
            **columns[run.pk],
        }
        for run in runs
    ]


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def latency_percentiles(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """Per group, the mean over its finished runs of each latency percentile (ms)."""
    return [
        {"group": g.index, **{name: _mean([getattr(run, f"latency_{name}") for run in g.done]) for name in PERCENTILES}}
        for g in groups
    ]


def os_means(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """Per group, the mean over its finished runs of each run's iostat and vmstat means."""

    def mean_of(group: Group, source: str, key: str) -> float | None:
        return _mean([((run.os_means or {}).get(source) or {}).get(key) for run in group.done])

    return [
        {
            "group": g.index,
            "iostat": {key: mean_of(g, "iostat", key) for key in IOSTAT_MEANS},
            "vmstat": {key: mean_of(g, "vmstat", key) for key in VMSTAT_MEANS},
        }
        for g in groups
    ]


def comparison_data(result: ComparisonResult) -> dict[str, Any]:
    """Everything the charts draw, and the API answers: the numbers of the page's tables."""
    group_of = {run.pk: g for g in result.groups for run in g.runs}
    return {
        "title": result.title,
        "query": result.query.as_params(),
        "groups": [
            {
                "index": g.index,
                "label": g.label,
                "baseline": g is result.baseline,
                "facet": g.facet,
                "runs": [run.pk for run in g.runs],
                "done": [run.pk for run in g.done],
            }
            for g in result.groups
        ],
        "facets": result.facets,
        "metrics": [
            {
                "key": table.metric.key,
                "label": table.metric.label,
                "unit": table.metric.unit,
                "direction": table.metric.direction,
                "rows": [
                    {
                        "group": row.group.index,
                        "summary": row.summary.as_json(),
                        "values": [{"run": pk, "value": value} for pk, value in row.values],
                        "comparison": row.comparison.as_json() if row.comparison else None,
                        "failed": row.failed,
                        "confounded": row.marker,
                    }
                    for row in table.rows
                ],
            }
            for table in result.tables
        ],
        "latency_percentiles": latency_percentiles(result.groups),
        "os": os_means(result.groups),
        "series": series(shown_runs(result), group_of),
        "differs": [d.as_json() for d in result.differences],
        "warnings": result.warnings,
        "drift": [change.said() for change in result.drift],
    }
