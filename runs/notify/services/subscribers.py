"""A schedule's subscribers: added (an email address, a webhook URL, or both; a webhook gets a
secret of its own, shown once) and removed, each audited."""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.http import HttpRequest

from runs.common.services.audit import audit_record
from runs.models import AuditAction, CampaignSchedule, ScheduleSubscriber
from runs.notify.signing import new_secret

URL_MAX = 500
MAX_SUBSCRIBERS = 50  # a schedule's: each round's news is one message per subscriber


class SubscriberRefused(ValueError):
    """What is wrong with a subscriber asked for, field by field."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{field}: {text}" for field, text in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class Subscribed:
    subscriber: ScheduleSubscriber
    secret: str  # the webhook's secret, to be shown this once ("" without a webhook)


WEBHOOK_URL_EXAMPLE = "https://hooks.example.org/benchlab"


def webhook_url_problem(url: str) -> str | None:
    """What is wrong with a webhook URL (None: nothing): an http(s) URL with a host, a port that is
    a number, and no spaces or control characters (which no HTTP request line can carry)."""
    if len(url) > URL_MAX:
        return f"a webhook URL is at most {URL_MAX} characters, not {len(url)}"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "a webhook URL has no spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a port that is no number or out of range
    except ValueError as exc:  # "http://[::1/x": an unclosed IPv6 address
        return f"a webhook URL must be http:// or https:// with a host ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"a webhook URL must be http:// or https:// with a host (such as {WEBHOOK_URL_EXAMPLE})"
    return None


def subscriber_errors(email: str, webhook_url: str) -> dict[str, str]:
    errors = {}
    if not email and not webhook_url:
        errors["email"] = "give an email address, a webhook URL, or both"
    if email:
        try:
            validate_email(email)
        except ValidationError:
            errors["email"] = f"{email[:80]!r} is not an email address (such as ops@example.org)"
    if webhook_url:
        if problem := webhook_url_problem(webhook_url):
            errors["webhook_url"] = f"{problem}, not {webhook_url[:80]!r}"
    return errors


def subscriber_add(
    *,
    schedule: CampaignSchedule,
    email: str = "",
    webhook_url: str = "",
    actor: Any,
    request: HttpRequest | None = None,
) -> Subscribed:
    email, webhook_url = email.strip(), webhook_url.strip()
    if webhook_url and not webhook_url_problem(webhook_url):
        # "HTTP://host/x" as "http://host/x": the delivery only posts to what starts with http(s)://.
        scheme, rest = webhook_url.split(":", 1)
        webhook_url = f"{scheme.lower()}:{rest}"
    errors = subscriber_errors(email, webhook_url)
    if not errors and schedule.subscribers.count() >= MAX_SUBSCRIBERS:
        errors["email"] = f"a schedule has at most {MAX_SUBSCRIBERS} subscribers: remove one first"
    if errors:
        raise SubscriberRefused(errors)
    secret = new_secret() if webhook_url else ""
    with transaction.atomic():
        subscriber = ScheduleSubscriber.objects.create(
            schedule=schedule, email=email, webhook_url=webhook_url, webhook_secret=secret
        )
        audit_record(
            action=AuditAction.SUBSCRIBER_ADDED, target=schedule, actor=actor, request=request,
            message=f"subscriber {subscriber.pk}: {subscriber}",
        )  # fmt: skip
    return Subscribed(subscriber, secret)


def subscriber_remove(*, subscriber: ScheduleSubscriber, actor: Any, request: HttpRequest | None = None) -> None:
    with transaction.atomic():
        audit_record(
            action=AuditAction.SUBSCRIBER_REMOVED, target=subscriber.schedule, actor=actor, request=request,
            message=f"subscriber {subscriber.pk}: {subscriber}",
        )  # fmt: skip
        subscriber.delete()
