"""The outbox: a message for each subscriber (and each of its channels) of the schedules concerned,
written in the caller's transaction, so what caused it and its notice are committed together or
not at all; its delivery task is sent once that commits (runs.notify.services.deliver), and beat
picks up whatever is due again (a lost task, a retry)."""

from collections.abc import Iterable
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchlab.celery import app
from runs.models import Channel, Notification, NotificationEvent, ScheduleSubscriber

DELIVER_TASK = "runs.deliver_notification"  # runs.tasks.deliver_notification, sent by name


def _send(notification_id: int) -> None:
    app.send_task(DELIVER_TASK, args=[notification_id])


def notify_schedules(schedule_ids: Iterable[int], event: str, payload: dict[str, Any]) -> list[Notification]:
    """Write a notification of `event` to every subscriber of the schedules; each schedule's own
    name and id are added to the payload."""
    now = timezone.now()
    made = []
    subscribers = ScheduleSubscriber.objects.filter(schedule_id__in=list(schedule_ids)).select_related("schedule")
    for subscriber in subscribers:
        schedule = subscriber.schedule
        body = {
            "type": NotificationEvent(event).value,
            "title": NotificationEvent(event).label,
            "schedule": {"id": schedule.pk, "name": schedule.name},
            "at": now.isoformat(),
            **payload,
        }
        targets = [(Channel.EMAIL, subscriber.email), (Channel.WEBHOOK, subscriber.webhook_url)]
        for channel, target in targets:
            if target:
                notification = Notification.objects.create(
                    subscriber=subscriber, event=event, channel=channel, target=target,
                    payload=body, created_at=now, next_attempt_at=now,
                )  # fmt: skip
                made.append(notification)
    for notification in made:
        transaction.on_commit(partial(_send, notification.pk))
    return made
