"""Reads for a schedule's page: its subscribers and the deliveries that failed (two queries)."""

from dataclasses import dataclass

from django.db.models import Q

from runs.models import Notification, ScheduleSubscriber


@dataclass(frozen=True)
class Failure:
    notification: Notification
    given_up: bool

    @property
    def text(self) -> str:
        """ "webhook to https://… failed 3 times: connection refused (tried again at 21:04)" """
        return self._said(self.notification.target)

    @property
    def masked_text(self) -> str:
        """The same with the webhook's URL masked, for those who may not change the schedule."""
        return self._said(self.notification.target_masked)

    def _said(self, target: str) -> str:
        n = self.notification
        times = "once" if n.attempts == 1 else f"{n.attempts} times"
        then = "given up" if self.given_up else f"tried again at {n.next_attempt_at:%Y-%m-%d %H:%M} UTC"
        return f"{n.get_channel_display()} to {target} failed {times}: {n.last_error} ({then})"


def schedule_subscribers(schedule_id: int) -> list[ScheduleSubscriber]:
    return list(ScheduleSubscriber.objects.filter(schedule_id=schedule_id))


def schedule_failures(schedule_id: int, limit: int = 20) -> list[Failure]:
    """Notifications not delivered that failed at least once, newest first."""
    failed = Notification.objects.filter(
        Q(delivered_at__isnull=True), subscriber__schedule_id=schedule_id, attempts__gt=0
    ).order_by("-created_at", "-id")[:limit]
    return [Failure(n, n.next_attempt_at is None) for n in failed]
