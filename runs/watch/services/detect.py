"""Change points stored (runs.models.watch): a series' detection (runs.watch.selectors.series_detail,
which runs runs.watch.changepoints.detect per metric) written as rows, one per change point, upserted
by identity (series key, metric, the first round after it). Detecting again updates the numbers and
leaves the triage alone; a change point seen for the first time is new, and the subscribers of the
schedules whose rounds are in the series hear of it (runs.notify), in the same transaction.

A change point detection no longer finds (more rounds moved it by one) stays stored, as it was
triaged: the regressions page lists what was found, and a person closes it."""

from dataclasses import dataclass

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from runs.models import Campaign, StoredChangePoint
from runs.notify.services.outbox import notify_schedules
from runs.watch.links import rounds_comparison_path
from runs.watch.selectors import SeriesChange, series_detail


@dataclass(frozen=True)
class Detected:
    stored: int  # change points the series has now (those found this time)
    new: list[StoredChangePoint]


def _numbers(change: SeriesChange) -> dict[str, object]:
    point = change.point
    return {
        "before_mean": point.before_mean,
        "after_mean": point.after_mean,
        "change": point.change,
        "change_low": point.change_low,
        "change_high": point.change_high,
        "p": point.p,
        "rounds_before": point.rounds_before,
        "rounds_after": point.rounds_after,
        "round_before": change.round_before.number,
        "round_after": change.round_after.number,
        "drift": "\n".join(event.text for event in change.drift),
        "comparison_url": rounds_comparison_path(change.round_before.run_ids, change.round_after.run_ids),
    }


def change_point_payload(stored: StoredChangePoint) -> dict[str, object]:
    """What a subscriber is told of a change point (the webhook's JSON, the email's lines)."""
    return {
        "id": stored.identity,
        "series": stored.series_key,
        "series_title": stored.title,
        "metric": stored.metric,
        "change": stored.change,
        "change_low": stored.change_low,
        "change_high": stored.change_high,
        "p": stored.p,
        "mean_before": stored.before_mean,
        "mean_after": stored.after_mean,
        "round_before": stored.round_before,
        "round_after": stored.round_after,
        "series_path": reverse("series-detail", args=[stored.series_key]),
        "comparison_path": stored.comparison_url,
        "drift": stored.drift.splitlines(),
    }


def watch_detect(series_key: str) -> Detected:
    """Detect the series' change points now and store them; the new ones."""
    detail = series_detail(series_key)
    if detail is None:
        return Detected(0, [])
    campaigns = {r.campaign_id for r in detail.rounds if r.campaign_id is not None}
    new = []
    with transaction.atomic():
        for change in detail.changes:
            ref = change.round_after.ref
            fields = _numbers(change) | {"title": detail.title[:500], "updated_at": timezone.now()}
            stored, created = StoredChangePoint.objects.select_for_update().get_or_create(
                series_key=series_key, metric=change.metric.key, round_ref=ref, defaults=fields
            )
            if created:
                new.append(stored)
            else:
                StoredChangePoint.objects.filter(pk=stored.pk).update(**fields)
        if new:
            schedules = set(
                Campaign.objects.filter(pk__in=campaigns, schedule__isnull=False).values_list("schedule_id", flat=True)
            )
            for stored in new:
                notify_schedules(schedules, "change_point", {"change_point": change_point_payload(stored)})
    return Detected(len(detail.changes), new)
