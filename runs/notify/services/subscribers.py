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
        parts = urlsplit(webhook_url)
        if len(webhook_url) > URL_MAX:
            errors["webhook_url"] = f"a webhook URL is at most {URL_MAX} characters, not {len(webhook_url)}"
        elif parts.scheme not in ("http", "https") or not parts.hostname:
            errors["webhook_url"] = (
                f"a webhook URL must be http:// or https:// with a host (such as https://hooks.example.org/benchlab), "
                f"not {webhook_url[:80]!r}"
            )
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
