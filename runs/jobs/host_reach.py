"""A lab host that does not answer when a job is to start on it: the job waits instead of failing.

A run, a PostgreSQL build and a fio baseline all open their connections at their start through
lab_access.host_connect_for_run, before anything is started on a host. A host that does not
answer there (no route, refused, no SSH banner; runs.lab.errors.HostNotAnswering) is marked
unreachable: since when, the last error, and when a job may try again. The job goes back to
queued, saying why, and gives its hosts back; the dispatcher (jobs.dispatch) leaves the host
alone until the retry time, which backs off from FIRST_RETRY_S to LONGEST_RETRY_S, then sends the
first job in line on it again (beat dispatches every 30 s). The first connection that finds the
host answering clears the mark, and the queue goes on in its order. Once the host has not
answered for BENCHLAB_UNREACHABLE_FAIL_AFTER_S, each job that meets it fails, saying so.

A host that answers but refuses (a changed host key, no private key) is not waited for: the job
fails with that reason, as before.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from runs.lab.errors import ConnectFailed
from runs.models import Host

log = logging.getLogger(__name__)
FIRST_RETRY_S, LONGEST_RETRY_S = 5.0, 120.0
# A job sent back to queued is as it was before a worker took it: the dispatcher sends it again.
NOT_STARTED = {"started_at": None, "worker": "", "heartbeat_at": None}


class HostAway(ConnectFailed):
    """A host did not answer at a job's start: since when, why, and whether its jobs have waited
    long enough. Its message is the connection's own; `wait` and `failure` say the rest."""

    def __init__(self, name: str, since: datetime, error: str, overdue: bool) -> None:
        super().__init__(error)
        self.name, self.since, self.error, self.overdue = name, since, error, overdue

    @property
    def wait(self) -> str:
        """Why a job went back to queued, for its record."""
        return f"{self.name} did not answer ({self.error}); waiting for it since {local_time(self.since)}"

    @property
    def failure(self) -> str:
        """A failed job's error, naming the host, since when, and the last error."""
        limit = settings.BENCHLAB_UNREACHABLE_FAIL_AFTER_S
        return (
            f"{self.name} has been unreachable since {local_time(self.since)} (longer than "
            f"BENCHLAB_UNREACHABLE_FAIL_AFTER_S = {limit:g} s); last error: {self.error}"
        )


def local_time(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S %Z")


def host_mark_unreachable(host: Host, error: str) -> HostAway:
    """Record that the host did not answer now, and when a job may try it again: after as long
    as it has been away (so the tries back off), within FIRST_RETRY_S..LONGEST_RETRY_S, and no
    later than its limit; past the limit, at once (each job queued for it fails in turn)."""
    now = timezone.now()
    Host.objects.filter(pk=host.pk, unreachable_since__isnull=True).update(unreachable_since=now)
    since = Host.objects.values_list("unreachable_since", flat=True).get(pk=host.pk) or now
    away_s = (now - since).total_seconds()
    left_s = settings.BENCHLAB_UNREACHABLE_FAIL_AFTER_S - away_s
    retry_at = now + timedelta(seconds=max(0.0, min(max(away_s, FIRST_RETRY_S), LONGEST_RETRY_S, left_s)))
    Host.objects.filter(pk=host.pk).update(unreachable_error=error, unreachable_retry_at=retry_at)
    log.warning("%s is unreachable since %s (%s); tried again from %s", host.name, since, error, retry_at)
    return HostAway(host.name, since, error, overdue=left_s <= 0)


def host_mark_reachable(host: Host) -> bool:
    """The host answered: clear its mark (if it had one)."""
    cleared = Host.objects.filter(pk=host.pk, unreachable_since__isnull=False).update(
        unreachable_since=None, unreachable_error="", unreachable_retry_at=None
    )
    if cleared:
        log.warning("%s answers again", host.name)
    return bool(cleared)
