"""Reads for campaigns: progress and ETA, the matrix of configurations by repetitions with each
run's state, the statistics per configuration against a baseline (runs.compare.stats), and the wall
time a plan is expected to take. The page and the API show the same numbers from here.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runs.bench.specs import RunSpec
from runs.campaigns.selectors.estimates import WallEstimate, plan_estimate, time_left
from runs.compare.metrics import METRICS, Metric, metric_annotations
from runs.compare.stats import Comparison, Summary, compare, summarise
from runs.models import FINAL_STATES, Campaign, CampaignConfiguration, Run, RunState


@dataclass(frozen=True)
class Progress:
    total: int
    by_state: dict[str, int]
    eta_s: float | None  # None: nothing left, or nothing to base it on

    @property
    def finished(self) -> int:
        return sum(self.by_state.get(state, 0) for state in FINAL_STATES)

    @property
    def states(self) -> list[tuple[str, int]]:
        """(the state in words, how many runs are in it), in the order runs go through them."""
        return [(state.label, self.by_state[state]) for state in RunState if self.by_state.get(state)]

    @property
    def running(self) -> int:
        return self.total - self.finished - self.by_state.get(RunState.QUEUED, 0)


@dataclass(frozen=True)
class MatrixRow:
    configuration: CampaignConfiguration
    attempts: dict[int, list[Run]]  # repetition → its runs, first attempt first

    @property
    def unfinished(self) -> bool:
        return any(not run.is_finished for runs in self.attempts.values() for run in runs)


@dataclass(frozen=True)
class StatisticsRow:
    configuration: CampaignConfiguration
    summary: Summary
    comparison: Comparison | None  # None for the baseline itself
    failed: int
    failures: list[str] = field(default_factory=list)  # "run 12: why", for the failed ones


@dataclass(frozen=True)
class MetricTable:
    metric: Metric
    rows: list[StatisticsRow]

    @property
    def has_values(self) -> bool:
        return any(row.summary.n for row in self.rows)


def campaign_runs(campaign: Campaign) -> list[Run]:
    # Only what the pages use: cache hits and %util are columns, the CPU's means are in os_means
    # (a few numbers); the other JSON fields are left behind.
    return list(
        Run.objects.filter(campaign=campaign)
        .select_related("server_host")
        .prefetch_related("run_clients")  # RunSpec.from_run reads them
        .defer("summary", "environment", "metrics", "failed_output")
        .annotate(**metric_annotations())  # sysbench's figures, out of the metrics JSON
        .order_by("pk")
    )


def campaign_matrix(campaign: Campaign, runs: Sequence[Run]) -> list[MatrixRow]:
    attempts: dict[int, dict[int, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        if run.configuration_id is not None and run.repetition is not None:
            attempts[run.configuration_id][run.repetition].append(run)
    return [MatrixRow(c, dict(attempts[c.pk])) for c in campaign.configurations.all()]


def campaign_progress(campaign: Campaign, runs: Sequence[Run]) -> Progress:
    by_state: dict[str, int] = defaultdict(int)
    for run in runs:
        by_state[run.state] += 1
    return Progress(total=len(runs), by_state=dict(by_state), eta_s=time_left(runs, campaign.fresh_database))


def campaign_statistics(campaign: Campaign, runs: Sequence[Run], baseline_index: int) -> list[MetricTable]:
    """Per metric, a row per configuration: its summary over the finished runs, its comparison
    with the baseline, and the failed runs (never counted silently)."""
    configurations = list(campaign.configurations.all())
    done: dict[int, list[Run]] = defaultdict(list)
    failed: dict[int, list[Run]] = defaultdict(list)
    for run in runs:
        if run.configuration_id is None:
            continue
        if run.state == RunState.DONE:
            done[run.configuration_id].append(run)
        elif run.state == RunState.FAILED:
            failed[run.configuration_id].append(run)
    baseline = next((c for c in configurations if c.index == baseline_index), configurations[0])
    tables = []
    for metric in METRICS:
        values = {c.pk: [v for run in done[c.pk] if (v := metric.value(run)) is not None] for c in configurations}
        others = {pk: vs for pk, vs in values.items() if pk != baseline.pk}
        comparisons = compare(values[baseline.pk], others, metric.direction)
        rows = [
            StatisticsRow(
                configuration=c,
                summary=summarise(values[c.pk]),
                comparison=comparisons.get(c.pk),
                failed=len(failed[c.pk]),
                failures=[f"run {run.pk}: {run.error or 'failed'}" for run in failed[c.pk]],
            )
            for c in configurations
        ]
        tables.append(MetricTable(metric, rows))
    return tables


@dataclass(frozen=True)
class AdaptiveState:
    """Where a configuration of an adaptive campaign stands, and why."""

    repeating: bool
    reason: str


def adaptive_status(campaign: Campaign, runs: Sequence[Run]) -> dict[CampaignConfiguration, AdaptiveState]:
    """For an adaptive campaign, per configuration: does it need another repetition, and why
    (or why it stopped). Repetitions count attempts: a failed one is used up (retry it)."""
    target, most = campaign.target_ci_pct, campaign.max_repetitions or campaign.repetitions
    status: dict[CampaignConfiguration, AdaptiveState] = {}
    for configuration in campaign.configurations.all():
        mine = [run for run in runs if run.configuration_id == configuration.pk]
        values = [run.steady_tps_mean for run in mine if run.state == RunState.DONE and run.steady_tps_mean]
        used = len({run.repetition for run in mine})
        half = summarise([v for v in values if v is not None]).ci_half_width_pct
        shown = f"±{half:.1f} %" if half is not None else "not yet known"
        if target is not None and half is not None and half <= target:
            status[configuration] = AdaptiveState(False, f"CI {shown} is within ±{target:g} % after {len(values)} runs")
        elif used >= most:
            status[configuration] = AdaptiveState(False, f"stopped at the maximum of {most} repetitions (CI {shown})")
        else:
            status[configuration] = AdaptiveState(True, f"repeating: CI {shown}, target ±{target:g} %")
    return status


def plan_wall_estimate(specs: Sequence[RunSpec], repetitions: int, fresh_database: bool = False) -> WallEstimate:
    """The plan's wall time, by the estimator the campaign's page uses for its time left."""
    return plan_estimate(specs, repetitions, fresh_database)


def campaign_list() -> list[dict[str, Any]]:
    """Every campaign with its run counts by state, newest first, in two queries."""
    campaigns = list(Campaign.objects.select_related("created_by"))
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for campaign_id, state in Run.objects.filter(campaign__isnull=False).values_list("campaign_id", "state"):
        counts[campaign_id][state] += 1
    return [
        {
            "campaign": c,
            "total": sum(counts[c.pk].values()),
            "done": counts[c.pk].get(RunState.DONE, 0),
            "failed": counts[c.pk].get(RunState.FAILED, 0),
            "finished": sum(counts[c.pk].get(s, 0) for s in FINAL_STATES),
        }
        for c in campaigns
    ]


# Seed 004's table: throughput and latency beside what explains them (the cache, the CPU, the disk).
SIDE_BY_SIDE = ("steady_tps", "latency_avg", "cache_hit", "cpu_busy", "cpu_iowait", "util")


@dataclass(frozen=True)
class SideBySide:
    """Each configuration's mean of several metrics in one row (the statistics tables' own means)."""

    metrics: list[Metric]
    rows: list[tuple[CampaignConfiguration, list[float | None]]]


def side_by_side(tables: Sequence[MetricTable]) -> SideBySide | None:
    """The means of SIDE_BY_SIDE's metrics per configuration; None before any run has finished."""
    chosen = [table for key in SIDE_BY_SIDE for table in tables if table.metric.key == key]
    if not chosen or not any(table.has_values for table in chosen):
        return None
    rows = [
        (row.configuration, [table.rows[index].summary.mean for table in chosen])
        for index, row in enumerate(chosen[0].rows)
    ]
    return SideBySide([table.metric for table in chosen], rows)
