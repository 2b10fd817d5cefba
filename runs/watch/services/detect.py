"""Change points stored (runs.models.watch): a series' detection (runs.watch.selectors.series_detail,
which runs runs.watch.changepoints.detect per metric) written as rows, one per change point, upserted
by identity (series key, metric, the first round after it). Detecting again updates the numbers and
leaves the triage alone; a change point seen for the first time is new, and the subscribers of the
schedules whose rounds are in the series hear of it (runs.notify), in the same transaction, if it
is fresh news rather than history read for the first time (FRESH_ROUNDS_AFTER).

A stored change point a later detection of its series no longer finds (more rounds moved it, or it
was noise) is marked gone (gone_at: when it was first missed), never deleted: its triage stays, the
regressions page and the API leave it out unless asked for the gone ones, and a detection that
finds it again clears the mark."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from runs.models import Campaign, StoredChangePoint
from runs.notify.services.outbox import notify_schedules
from runs.watch.changepoints import MIN_SIZE
from runs.watch.links import rounds_comparison_path, site_url
from runs.watch.selectors import Round, SeriesChange, series_detail


@dataclass(frozen=True)
class Detected:
    stored: int  # change points the series has now (those found this time)
    new: list[StoredChangePoint]
    gone: int = 0  # stored ones this detection no longer found (marked now)


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


def _first_round_after(ref: str) -> dict[str, object]:
    """The first round after the change as its campaign (id, name, its number in its schedule) or
    its run: the series' own round numbers are not the schedule's (a series also counts the template
    and runs made alone), so a subscriber is told which campaign it was."""
    if ref.startswith("c"):
        campaign = Campaign.objects.filter(pk=int(ref[1:])).values("pk", "name", "schedule_round").first()
        if campaign is not None:
            return {"campaign": {"id": campaign["pk"], "name": campaign["name"],
                                 "schedule_round": campaign["schedule_round"]}}  # fmt: skip
    return {"run": int(ref[1:])} if ref.startswith("r") else {}


def change_point_payload(stored: StoredChangePoint) -> dict[str, object]:
    """What a subscriber is told of a change point (the webhook's JSON, the email's lines)."""
    series_path = reverse("series-detail", args=[stored.series_key])
    return {
        "id": stored.identity,
        "first_round_after": _first_round_after(stored.round_ref),
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
        "series_path": series_path,
        "comparison_path": stored.comparison_url,
        # Absolute, on BENCHLAB_SITE_URL; None when it is not set (the paths above are then all there is).
        "series_url": site_url(series_path),
        "comparison_url": site_url(stored.comparison_url),
        "drift": stored.drift.splitlines(),
    }


# A change can be found once MIN_SIZE rounds follow it; one first found with more than this many
# rounds after it is history read for the first time (a backfill, a schedule started on a
# configuration run for months), stored and listed but not told as news.
FRESH_ROUNDS_AFTER = 2 * MIN_SIZE


def watch_detect(series_key: str, *, tell: bool = True) -> Detected:
    """Detect the series' change points now and store them, marking the stored ones no longer
    found; the new ones. The subscribers hear of the fresh ones among them (FRESH_ROUNDS_AFTER),
    unless `tell` is False."""
    detail = series_detail(series_key)
    changes = detail.changes if detail is not None else []
    new = []
    with transaction.atomic():
        for change in changes:
            stored, created = _upserted(series_key, change, detail.title if detail else "")
            if created:
                new.append(stored)
        gone = _mark_gone(series_key, {(change.metric.key, change.round_after.ref) for change in changes})
        fresh = [stored for stored in new if stored.rounds_after <= FRESH_ROUNDS_AFTER]
        if tell and fresh and detail is not None:
            _tell(detail.rounds, fresh)
    return Detected(len(changes), new, gone)


def _upserted(series_key: str, change: SeriesChange, title: str) -> tuple[StoredChangePoint, bool]:
    """The change point stored (its numbers as found now; found again if it was gone), and whether it is new."""
    now = timezone.now()
    fields = _numbers(change) | {"title": title[:500], "updated_at": now, "gone_at": None}
    stored, created = StoredChangePoint.objects.select_for_update().get_or_create(
        series_key=series_key, metric=change.metric.key, round_ref=change.round_after.ref, defaults=fields
    )
    if not created:
        StoredChangePoint.objects.filter(pk=stored.pk).update(**fields)
    return stored, created


def _mark_gone(series_key: str, found: set[tuple[str, str]]) -> int:
    """Mark the series' stored change points not found this time (those already marked keep their
    first missed time); how many were marked now. Never deletes: a triaged point keeps its triage."""
    still = StoredChangePoint.objects.filter(series_key=series_key, gone_at__isnull=True)
    missed = [pk for pk, metric, ref in still.values_list("pk", "metric", "round_ref") if (metric, ref) not in found]
    return StoredChangePoint.objects.filter(pk__in=missed).update(gone_at=timezone.now()) if missed else 0


def _tell(rounds: Sequence[Round], new: list[StoredChangePoint]) -> None:
    """The subscribers of the schedules whose rounds are in the series hear of each new change point."""
    campaigns = {r.campaign_id for r in rounds if r.campaign_id is not None}
    schedules = set(
        Campaign.objects.filter(pk__in=campaigns, schedule__isnull=False).values_list("schedule_id", flat=True)
    )
    for stored in new:
        notify_schedules(schedules, "change_point", {"change_point": change_point_payload(stored)})
