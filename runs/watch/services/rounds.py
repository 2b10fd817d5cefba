"""A scheduled round against the one before it: each configuration's repetitions, metric by metric,
through the comparison pages' own test (runs.compare.stats.compare, Welch and Fieller). A round
"moved beyond noise" where p < ALPHA and the change is at least MIN_CHANGE; the schedule's
subscribers hear of it once (runs.notify), with every configuration and metric that moved."""

import math
from typing import Any

from django.urls import reverse

from runs.compare.metrics import METRICS, metric_annotations
from runs.compare.stats import compare
from runs.models import Campaign, Notification, NotificationEvent, Run, RunState
from runs.notify.services.outbox import notify_schedules
from runs.watch.links import rounds_comparison_path, site_url

ALPHA = 0.05
MIN_CHANGE = 0.02  # 2 %: as the change points' (runs.watch.changepoints.MIN_CHANGE)


def _runs_by_configuration(campaign_id: int) -> dict[int, list[Run]]:
    runs = (
        Run.objects.filter(campaign_id=campaign_id, state=RunState.DONE, configuration__isnull=False)
        .select_related("configuration")
        .annotate(**metric_annotations())
        .order_by("pk")
    )
    found: dict[int, list[Run]] = {}
    for run in runs:
        assert run.configuration is not None  # filtered above
        found.setdefault(run.configuration.index, []).append(run)
    return found


def _values(runs: list[Run], metric: Any) -> list[float]:
    return [float(v) for run in runs if (v := metric.value(run)) is not None and math.isfinite(float(v))]


def round_movements(campaign: Campaign, previous: Campaign) -> list[dict[str, Any]]:
    """Each configuration's metrics that moved between the previous round and this one."""
    before, after = _runs_by_configuration(previous.pk), _runs_by_configuration(campaign.pk)
    moved = []
    for index in sorted(set(before) & set(after)):
        link = rounds_comparison_path([r.pk for r in before[index]], [r.pk for r in after[index]])
        for metric in METRICS:
            old, new = _values(before[index], metric), _values(after[index], metric)
            if len(old) < 2 or len(new) < 2:
                continue  # Welch's test needs two repetitions a side
            found = compare(old, {0: new})[0]
            if found.welch_p is None or found.ratio is None:
                continue
            change = found.ratio - 1
            if found.welch_p < ALPHA and abs(change) >= MIN_CHANGE:
                moved.append({
                    "configuration": getattr(after[index][0].configuration, "label", ""),
                    "metric": metric.key,
                    "change": change,
                    "change_low": None if found.ratio_ci_low is None else found.ratio_ci_low - 1,
                    "change_high": None if found.ratio_ci_high is None else found.ratio_ci_high - 1,
                    "p": found.welch_p,
                    "mean_before": math.fsum(old) / len(old),
                    "mean_after": math.fsum(new) / len(new),
                    "comparison_path": link,
                    "comparison_url": site_url(link),  # None without BENCHLAB_SITE_URL
                })  # fmt: skip
    return moved


def round_moved_notify(campaign: Campaign) -> int:
    """Compare a scheduled round that has ended with the schedule's previous one, and tell the
    subscribers what moved (once a round: the caller holds the campaign's row); how many moved."""
    if campaign.schedule_id is None or campaign.schedule_round is None:
        return 0
    previous = (
        Campaign.objects.filter(schedule_id=campaign.schedule_id, schedule_round__lt=campaign.schedule_round)
        .order_by("-schedule_round")
        .first()
    )
    if previous is None:
        return 0
    told = Notification.objects.filter(event=NotificationEvent.ROUND_MOVED, payload__round__campaign=campaign.pk)
    if told.exists():
        return 0
    moved = round_movements(campaign, previous)
    if moved:
        payload = {
            "round": {
                "campaign": campaign.pk,
                "number": campaign.schedule_round,
                "path": _campaign_path(campaign),
                "url": site_url(_campaign_path(campaign)),
            },
            "previous_round": {"campaign": previous.pk, "number": previous.schedule_round},
            "moved": moved,
        }
        notify_schedules([campaign.schedule_id], NotificationEvent.ROUND_MOVED, payload)
    return len(moved)


def _campaign_path(campaign: Campaign) -> str:
    return reverse("campaign-detail", args=[campaign.pk])
