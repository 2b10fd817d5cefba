"""Delivering one notification, in its own Celery task (never in a run's: a slow mail server or
webhook receiver holds up nothing else). Email through Django's mail (settings from the
environment); a webhook as a signed JSON POST (runs.notify.signing), 10 s at most. A failure is
kept on the row (attempts, last error) and tried again later, with the same webhook-id, until
MAX_ATTEMPTS; the schedule's page shows what failed (runs.notify.selectors).

Two workers never deliver one notification at once: each first claims it by moving its next
attempt past the time a delivery can take (a conditional UPDATE); only the one that moved it sends.

Beat's sweep (every minute) sends a task for each notification that is due and has none waiting:
a delivery task can wait in the broker behind benchmarks that hold every worker for hours, and one
new task a minute for it would pile up there. The sweep hands the notification over by moving its
next attempt HANDOVER_S on; that time is the task's ticket, with which it may claim the notification
before it is due. A task whose ticket is no longer the row's (the sweep handed it over again: the
task was lost, or waited longer than HANDOVER_S) finds nothing to do."""

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from runs.models import Channel, Notification
from runs.notify.signing import headers

TIMEOUT_S = 10.0
MAX_ATTEMPTS = 5
FIRST_RETRY_S = 30.0  # then 4 times longer each: 30 s, 2 min, 8 min, 32 min
# Longer than an attempt can take: a webhook's 10 s is per socket operation (DNS, each address's
# connect, each read), and so is an email's EMAIL_TIMEOUT (up to 300 s) at each step of SMTP.
CLAIM_S = 15 * 60.0
HANDOVER_S = 15 * 60.0  # how long a task the sweep sent may wait for a worker before another is sent


def retry_after_s(attempts: int) -> float:
    """The wait before the next attempt, after `attempts` failed ones."""
    return FIRST_RETRY_S * 4 ** (attempts - 1)


def _undelivered() -> QuerySet[Notification]:
    return Notification.objects.filter(delivered_at__isnull=True, attempts__lt=MAX_ATTEMPTS)


def _claimed(notification_id: int, ticket: str | None) -> bool:
    """Whether this task may deliver it now (due, or its ticket is the row's), its claim recorded."""
    now = timezone.now()
    mine = Q(next_attempt_at__lte=now)
    if ticket is not None:
        mine |= Q(next_attempt_at=datetime.fromisoformat(ticket))
    claimed = _undelivered().filter(mine, pk=notification_id).update(next_attempt_at=now + timedelta(seconds=CLAIM_S))
    return bool(claimed)


def hand_over(notification_ids: Sequence[int]) -> list[tuple[int, str]]:
    """The due ones among `notification_ids`, each handed over to a task about to be sent: its
    next attempt moved HANDOVER_S on; (id, the task's ticket) for each."""
    now = timezone.now()
    ticket = now + timedelta(seconds=HANDOVER_S)
    with transaction.atomic():
        due = _undelivered().filter(pk__in=list(notification_ids), next_attempt_at__lte=now)
        handed = list(due.select_for_update(skip_locked=True).values_list("pk", flat=True))
        Notification.objects.filter(pk__in=handed).update(next_attempt_at=ticket)
    return [(pk, ticket.isoformat()) for pk in handed]


NO_SITE_URL = (
    "These are paths on benchlab's site, not links: BENCHLAB_SITE_URL is not set, so benchlab does not know "
    "its own address (set it, e.g. https://benchlab.example.org, for links)."
)


def _where(payload: dict[str, Any], what: str) -> str:
    """ "series https://…/series/…/" with the site's address, "series page /series/…/" without it"""
    url = payload.get(f"{what}_url")
    return f"{what} {url}" if url else f"{what} page {payload[f'{what}_path']}"


def _which(point: dict[str, Any]) -> str:
    """ " (the latter: campaign 42, “nightly · round 6”)": the series' round numbers are its own."""
    after = point.get("first_round_after") or {}
    if campaign := after.get("campaign"):
        return f" (the latter: campaign {campaign['id']}, “{campaign['name']}”)"
    return f" (the latter: run {after['run']})" if "run" in after else ""


def _summary(payload: dict[str, Any]) -> list[str]:
    """A line a change point or a moved metric, before the payload itself."""
    if point := payload.get("change_point"):
        return [
            f"{point['metric']} of {point['series_title']}: {point['change'] * 100:+.1f} % between rounds "
            f"{point['round_before']} and {point['round_after']} of the series{_which(point)} "
            f"(p = {point['p']:.2g}); {_where(point, 'series')}, {_where(point, 'comparison')}"
        ]
    return [
        f"{moved['configuration'] or 'configuration'}: {moved['metric']} {moved['change'] * 100:+.1f} % "
        f"against the previous round (Holm-adjusted p = {moved['p']:.2g}); {_where(moved, 'comparison')}"
        for moved in payload.get("moved", [])
    ]


def _linked(payload: dict[str, Any]) -> bool:
    found = [payload["change_point"]] if "change_point" in payload else payload.get("moved", [])
    return all(item.get("comparison_url") for item in found)


def email_text(notification: Notification) -> tuple[str, str]:
    """The subject and body of a notification's email: a line a finding, then the webhook's JSON."""
    payload = notification.payload
    schedule = payload["schedule"]["name"]
    subject = f"[benchlab] {schedule}: {payload['title']}"
    lines = "\n".join(_summary(payload)) + ("" if _linked(payload) else f"\n\n{NO_SITE_URL}")
    body = json.dumps(payload, indent=2, sort_keys=True)
    return subject, f"{payload['title']} (schedule {schedule}).\n\n{lines}\n\n{body}\n"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook's 3xx is its answer (a failure), not a place benchlab goes next."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def _post(notification: Notification, body: bytes) -> None:
    if not notification.target.startswith(("http://", "https://")):  # checked when subscribed; never file:
        raise ValueError(f"not an http(s) URL: {notification.target[:80]}")
    sent_at = int(timezone.now().timestamp())
    signed = headers(notification.subscriber.webhook_secret, notification.message_id, sent_at, body)
    request = urllib.request.Request(notification.target, data=body, method="POST", headers=signed)  # noqa: S310
    with _OPENER.open(request, timeout=TIMEOUT_S) as answer:
        answer.read(1024)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason)
    return str(exc) or type(exc).__name__


def deliver(notification_id: int, ticket: str | None = None) -> str:
    """Try to deliver one notification now: "delivered", "failed" (tried again later or given up),
    or "skipped" (delivered already, not due and not this task's, or another worker has it)."""
    if not _claimed(notification_id, ticket):
        return "skipped"
    notification = Notification.objects.select_related("subscriber").get(pk=notification_id)
    try:
        if notification.channel == Channel.EMAIL:
            subject, text = email_text(notification)
            send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [notification.target], fail_silently=False)
        else:
            _post(notification, json.dumps(notification.payload, sort_keys=True).encode())
    except Exception as exc:  # noqa: BLE001 - any failure of the receiver's is the row's to show, never the task's
        attempts = notification.attempts + 1
        due = timezone.now() + timedelta(seconds=retry_after_s(attempts)) if attempts < MAX_ATTEMPTS else None
        Notification.objects.filter(pk=notification_id).update(
            attempts=attempts, last_error=_error_text(exc)[:1000], next_attempt_at=due
        )
        return "failed"
    Notification.objects.filter(pk=notification_id).update(
        attempts=notification.attempts + 1, delivered_at=timezone.now(), next_attempt_at=None, last_error=""
    )
    return "delivered"


def due_notifications(limit: int = 100) -> list[int]:
    """The ids of notifications whose attempt is due (beat's sweep delivers them)."""
    due = _undelivered().filter(next_attempt_at__lte=timezone.now())
    return list(due.order_by("next_attempt_at").values_list("pk", flat=True)[:limit])
