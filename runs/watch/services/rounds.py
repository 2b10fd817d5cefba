"""A scheduled round against the one before it: each configuration's repetitions, metric by metric,
through the comparison pages' own test (runs.compare.stats.compare, Welch and Fieller).

Which configurations are compared: those of the same series (Run.series_key) in both rounds. Not
their index in the campaign: campaign_create numbers only the configurations valid that day, so
one that drops out (a device no longer wipeable) shifts the others' indexes, and index 0 of this
round would be compared with another configuration of the last one. A configuration in one round
only is not compared; the notice says so ("not_tested").

When a round "moved beyond noise": only the headline metrics are tested (ROUND_METRICS: throughput
and mean latency, what "did it get slower tonight" asks; the others' lasting shifts are the series'
change points), and every (configuration, metric) test of the round is one family, Holm-adjusted
(runs.compare.stats.holm_adjust). A test is told where its adjusted p < ALPHA and the change is at
least MIN_CHANGE. Measured over 1,000 seeded rounds of three configurations, three repetitions at
3 % CV (runs/tests/watch/test_round_moved.py): all ten metrics uncorrected told a false notice in
66 % of noise-only rounds; Holm over those 30 tests 1.9 %, but told a real +10 % move in one of them
in only 5.5 %; Holm over the 6 headline tests: false notices 2.6 %, the real move told in 21 %.
Three repetitions are little to tell a round from the last: the change points, over many rounds,
are the watch's main signal. A configuration with fewer than 2 repetitions in either round is not tested
(Welch's test needs a spread on each side): a schedule of single runs is never told of a move by
this check, only by the series' change points (runs.watch.services.detect).
"""

import math
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from runs.compare.metrics import METRICS, Metric, metric_annotations
from runs.compare.stats import Comparison, compare, holm_adjust
from runs.models import Campaign, Notification, NotificationEvent, Run, RunState
from runs.notify.services.outbox import notify_schedules
from runs.watch.links import rounds_comparison_path, site_url

ALPHA = 0.05
MIN_CHANGE = 0.02  # 2 %: as the change points' (runs.watch.changepoints.MIN_CHANGE)
MIN_REPETITIONS = 2  # Welch's test needs a spread on each side
# Throughput (pgbench's steady-state tps, sysbench's queries/s) and mean latency.
ROUND_METRICS = frozenset({"steady_tps", "qps", "latency_avg"})


@dataclass(frozen=True)
class Sample:
    """One configuration's one metric in both rounds: one test of the round's family."""

    configuration: str  # its label in this round
    metric: str
    old: list[float]
    new: list[float]
    comparison_path: str = ""


@dataclass(frozen=True)
class Movements:
    moved: list[dict[str, Any]]  # the tests told, as the notice's payload has them
    tests: int  # the size of the Holm family
    not_tested: list[dict[str, str]]  # each configuration left out, and why


def _runs_by_series(campaign_id: int) -> dict[str, list[Run]]:
    """The round's done runs by series: a configuration's repetitions share its key."""
    runs = (
        Run.objects.filter(
            campaign_id=campaign_id, state=RunState.DONE, configuration__isnull=False, series_key__isnull=False
        )
        .select_related("configuration")
        .annotate(**metric_annotations())
        .order_by("pk")
    )
    found: dict[str, list[Run]] = {}
    for run in runs:
        assert run.series_key is not None  # filtered above
        found.setdefault(run.series_key, []).append(run)
    return found


def _label(runs: list[Run]) -> str:
    return getattr(runs[0].configuration, "label", "")


def _values(runs: list[Run], metric: Metric) -> list[float]:
    return [float(v) for run in runs if (v := metric.value(run)) is not None and math.isfinite(float(v))]


def _unpaired_why(before: list[Run] | None, after: list[Run] | None) -> str:
    """Why a configuration is not tested, or "" when it is."""
    if not before:
        return "not in the previous round"
    if not after:
        return "not in this round"
    if min(len(before), len(after)) < MIN_REPETITIONS:
        return f"fewer than {MIN_REPETITIONS} repetitions in a round ({len(before)} before, {len(after)} now)"
    return ""


def _samples(before: dict[str, list[Run]], after: dict[str, list[Run]]) -> tuple[list[Sample], list[dict[str, str]]]:
    """The tests to make, configuration by configuration (paired by series), and those left out."""
    samples, not_tested = [], []
    for key in sorted(set(before) | set(after)):
        old_runs, new_runs = before.get(key), after.get(key)
        if why := _unpaired_why(old_runs, new_runs):
            not_tested.append({"configuration": _label(new_runs or old_runs or []), "series": key, "why": why})
            continue
        assert old_runs is not None and new_runs is not None  # _unpaired_why said both are there
        link = rounds_comparison_path([r.pk for r in old_runs], [r.pk for r in new_runs])
        for metric in (metric for metric in METRICS if metric.key in ROUND_METRICS):
            old, new = _values(old_runs, metric), _values(new_runs, metric)
            if len(old) >= MIN_REPETITIONS and len(new) >= MIN_REPETITIONS:  # a metric a run did not record
                samples.append(Sample(_label(new_runs), metric.key, old, new, link))
    return samples, not_tested


def _tested(samples: list[Sample]) -> list[tuple[Sample, Comparison, float]]:
    """Each sample's Welch test and its p; those scipy cannot test (both sides constant) are no test at all."""
    found = []
    for sample in samples:
        result = compare(sample.old, {0: sample.new})[0]  # one group: its adjusted p is Welch's own
        if result.welch_p is not None and result.ratio is not None:
            found.append((sample, result, result.welch_p))
    return found


def _moved(sample: Sample, result: Comparison, adjusted_p: float) -> dict[str, Any]:
    assert result.ratio is not None and result.welch_p is not None  # _tested kept only these
    low, high = result.ratio_ci_low, result.ratio_ci_high
    return {
        "configuration": sample.configuration,
        "metric": sample.metric,
        "change": result.ratio - 1,
        "change_low": None if low is None else low - 1,
        "change_high": None if high is None else high - 1,
        "p": adjusted_p,  # Holm-adjusted over the round's tests: the p the notice is decided on
        "p_unadjusted": result.welch_p,
        "mean_before": math.fsum(sample.old) / len(sample.old),
        "mean_after": math.fsum(sample.new) / len(sample.new),
        "comparison_path": sample.comparison_path,
        "comparison_url": site_url(sample.comparison_path) if sample.comparison_path else None,
    }


def moved_among(samples: list[Sample]) -> tuple[list[dict[str, Any]], int]:
    """The samples that moved beyond noise, Holm-adjusted as one family; and the family's size."""
    tested = _tested(samples)
    adjusted = holm_adjust([p for _, _, p in tested])
    moved = [
        _moved(sample, result, p)
        for (sample, result, _), p in zip(tested, adjusted, strict=True)
        if p < ALPHA and result.ratio is not None and abs(result.ratio - 1) >= MIN_CHANGE
    ]
    return moved, len(tested)


def round_movements(campaign: Campaign, previous: Campaign) -> Movements:
    """Each configuration's metrics that moved between the previous round and this one."""
    samples, not_tested = _samples(_runs_by_series(previous.pk), _runs_by_series(campaign.pk))
    moved, tests = moved_among(samples)
    return Movements(moved, tests, not_tested)


def _previous_round(campaign: Campaign) -> Campaign | None:
    return (
        Campaign.objects.filter(schedule_id=campaign.schedule_id, schedule_round__lt=campaign.schedule_round)
        .order_by("-schedule_round")
        .first()
    )


def _payload(campaign: Campaign, previous: Campaign, found: Movements) -> dict[str, Any]:
    path = reverse("campaign-detail", args=[campaign.pk])
    return {
        "round": {"campaign": campaign.pk, "number": campaign.schedule_round, "path": path, "url": site_url(path)},
        "previous_round": {"campaign": previous.pk, "number": previous.schedule_round},
        # Said in the notice itself: its p values are adjusted, and what was left untested.
        "test": (
            f"Welch's t-test per configuration and headline metric (throughput, mean latency); p is "
            f"Holm-adjusted over the round's {found.tests} "
            f"tests; told where p < {ALPHA} and the change is at least {MIN_CHANGE:.0%}"
        ),
        "moved": found.moved,
        "not_tested": found.not_tested,
    }


def round_moved_notify(campaign: Campaign) -> int:
    """Compare a scheduled round that has ended with the schedule's previous one, and tell the
    subscribers what moved (once a round: the caller holds the campaign's row); how many moved.

    Configurations are paired by series; every (configuration, headline metric) test of the round
    is one Holm family; a configuration with fewer than 2 repetitions in either round is not tested, so a
    schedule of single runs is never told of a move here (the change points still see it)."""
    if campaign.schedule_id is None or campaign.schedule_round is None:
        return 0
    previous = _previous_round(campaign)
    if previous is None:
        return 0
    told = Notification.objects.filter(event=NotificationEvent.ROUND_MOVED, payload__round__campaign=campaign.pk)
    if told.exists():
        return 0
    found = round_movements(campaign, previous)
    if found.moved:
        notify_schedules([campaign.schedule_id], NotificationEvent.ROUND_MOVED, _payload(campaign, previous, found))
    return len(found.moved)
