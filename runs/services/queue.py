"""Runs start in queue order on every host they need (FIFO), exactly one run at a time per host.

The dispatcher walks the queued runs in queue order (by id) and starts each run that is first
in line on every host it needs, when those hosts are free and enabled: it claims them (sets
`Host.claimed_by`) and hands the run to a worker once the claim commits. A run that is not
first in line blocks its hosts for every run behind it, so a run needing two hosts waits its
turn on both and is never overtaken, and a disabled host holds its runs (visibly: run_wait).

Dispatching is serialised by a PostgreSQL advisory lock, so any number of web processes and
workers may call it at once. It runs whenever a turn may have come: a run queued, a run ended,
a queued run cancelled, a host enabled; and periodically (Celery beat) in case a process died
between ending a run and dispatching.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

from django.db import connection, transaction
from django.db.models import Q

from runs.models import Host, Run, RunState
from runs.services.db_retry import with_database_retry

# Any fixed number, unique among benchlab's advisory locks (pg_advisory_xact_lock takes a bigint).
DISPATCH_LOCK_ID = 0x62656E63686C6162  # "benchlab"


def queue_dispatch() -> list[int]:
    """Claim the hosts of every run whose turn it is and send those runs to workers; their ids."""
    from runs.tasks import execute_run  # tasks import services; import here to avoid a cycle

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DISPATCH_LOCK_ID])
        started = _claim_turns()
        for run_id in started:
            # A worker must never see a claim that is not committed yet.
            transaction.on_commit(partial(execute_run.delay, run_id))
    return started


def _claim_turns() -> list[int]:
    hosts = list(Host.objects.values_list("pk", "enabled", "claimed_by_id", "cleanup_pending_for_id"))
    blocked = {pk for pk, enabled, claimed_by, pending in hosts if claimed_by or pending or not enabled}
    started: list[int] = []
    for run_id, server_id, client_id in _queued_in_order():
        needs = {server_id} | ({client_id} if client_id else set())
        if not needs & blocked and _claim(run_id, needs):
            started.append(run_id)
        blocked |= needs  # first in line on these hosts now: nobody behind may overtake it
        if len(blocked) == len(hosts):
            break
    return started


def _claim(run_id: int, host_ids: set[int]) -> bool:
    """Only the dispatcher claims, under its lock: a host found free stays free until now."""
    with transaction.atomic():
        free = Host.objects.filter(pk__in=host_ids, claimed_by__isnull=True, cleanup_pending_for__isnull=True)
        claimed = free.filter(enabled=True)
        if claimed.update(claimed_by_id=run_id) == len(host_ids):
            return True
        transaction.set_rollback(True)
        return False


def _queued_in_order() -> Iterable[tuple[int, int, int | None]]:
    # Queued runs that hold their hosts already are waiting for a worker, not for a turn; a run
    # a worker has started stays "queued" until its first step, and may have released its
    # hosts on its way to failing: neither may be started again.
    holding = Host.objects.filter(claimed_by__isnull=False).values("claimed_by_id")
    queued = Run.objects.filter(state=RunState.QUEUED, started_at__isnull=True).exclude(pk__in=holding)
    queued = queued.order_by("pk")
    return queued.values_list("pk", "server_host_id", "client_host_id").iterator()


def run_holds_its_hosts(run: Run) -> bool:
    return Host.objects.filter(claimed_by=run).count() == len(run.hosts)


def run_release_hosts(*, run: Run) -> int:
    """Free the run's hosts; retried through a restart of benchlab's database (a run whose
    hosts stay claimed blocks everything behind it). A conditional update: done twice, the
    second frees nothing more (and counts 0)."""
    release = Host.objects.filter(claimed_by=run)
    return with_database_retry(lambda: release.update(claimed_by=None), f"run {run.pk}: releasing its hosts")


@dataclass(frozen=True)
class HostWait:
    """Why a queued run has not started on one of its hosts."""

    host: str
    disabled: bool
    busy_with: int | None  # the run that has the host now (not this one)
    ahead: int  # queued runs before this one that need this host
    cleanup_pending_for: int | None = None  # a run that ended while the host was unreachable

    def __str__(self) -> str:
        if self.disabled:
            state = f"{self.host} is disabled (an admin enables it in the inventory)"
        elif self.cleanup_pending_for is not None:
            state = f"{self.host} waits to be cleaned up after run {self.cleanup_pending_for} (unreachable)"
        elif self.busy_with is not None:
            state = f"{self.host} busy with run {self.busy_with}"
        else:
            state = f"{self.host} free"
        if self.ahead:
            return f"{state}; {self.ahead} ahead of it"
        waiting = self.busy_with or self.disabled or self.cleanup_pending_for
        return state if waiting else f"{state}; first in line"


def run_wait(run: Run) -> list[HostWait]:
    """For a queued run: each of its hosts, whether it is disabled or busy, and how many runs
    are ahead of this one there. Empty when the run holds its hosts (a worker is starting it)
    or is not queued."""
    if run.state != RunState.QUEUED or run_holds_its_hosts(run):
        return []
    waits = []
    for host in Host.objects.filter(pk__in=[h.pk for h in run.hosts]).order_by("name"):
        uses_host = Q(server_host=host) | Q(client_host=host)
        # The run that holds the host is "busy with", not ahead, even before its worker starts.
        ahead_runs = Run.objects.filter(uses_host, state=RunState.QUEUED, pk__lt=run.pk)
        ahead = ahead_runs.exclude(pk=host.claimed_by_id).count() if host.claimed_by_id else ahead_runs.count()
        busy_with = host.claimed_by_id if host.claimed_by_id != run.pk else None
        waits.append(HostWait(host.name, not host.enabled, busy_with, ahead, host.cleanup_pending_for_id))
    return waits
