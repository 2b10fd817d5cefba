"""Jobs start in queue order on every host they need (FIFO), exactly one job at a time per host.

The dispatcher walks the queued jobs of every kind (runs, PostgreSQL builds, fio baselines:
jobs.kinds) in queue order and starts each job that is first in line on every host it needs,
when those hosts are free and enabled: it claims them (sets the kind's `Host.claimed_by*`) and
hands the job to a worker once the claim commits. A job that is not first in line blocks its
hosts for every job behind it, so a run needing two hosts waits its turn on both and is never
overtaken, and a disabled host holds its jobs (visibly: queue_waits). Each kind keeps its own
order (by id); the kinds are merged by the time they were queued.

Dispatching is serialised by a PostgreSQL advisory lock, so any number of web processes and
workers may call it at once. It runs whenever a turn may have come: a job queued, a job ended, a
queued job cancelled, a host enabled; and periodically (Celery beat) in case a process died
between ending a job and dispatching, and to try again a host that did not answer
(jobs.host_reach: its jobs wait, in their order, until it answers or their limit passes).

This module is also the one place that sends a job's task to a worker (send_task), by the
task's name: nothing below runs.tasks imports it.
"""

import heapq
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial

from django.db import connection, models, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from benchlab.celery import app
from runs.common.db_retry import with_database_retry
from runs.jobs import live
from runs.jobs.kinds import BASELINE, BUILD, KINDS, RUN, QueuedJob, kind_of
from runs.models import Host

log = logging.getLogger(__name__)

# Any fixed number, unique among benchlab's advisory locks (pg_advisory_xact_lock takes a bigint).
DISPATCH_LOCK_ID = 0x62656E63686C6162  # "benchlab"


@dataclass(frozen=True)
class Started:
    """What one dispatch started: runs, builds and baselines, by id."""

    runs: list[int] = field(default_factory=list)
    builds: list[int] = field(default_factory=list)
    baselines: list[int] = field(default_factory=list)

    def of(self, kind: str) -> list[int]:
        return {RUN: self.runs, BUILD: self.builds, BASELINE: self.baselines}[kind]


def send_task(task: str, job_id: int) -> None:
    """Hand job `job_id` to a worker: the task runs.tasks defines under that name."""
    app.send_task(task, args=[job_id])


def send_on_commit(task: str, job_id: int) -> None:
    """send_task once the caller's transaction commits: a worker must never see a claim (or a
    state) that is not committed yet."""
    transaction.on_commit(partial(send_task, task, job_id))


def queue_on_commit(job: models.Model, queued: models.TextChoices) -> None:
    """Once the caller's transaction commits, for a job it queued, in this order: an empty live
    stream, its `queued` state first in it, then a dispatch that may start it."""
    kind = kind_of(job).name
    transaction.on_commit(lambda: live.reset_job_stream(kind, job.pk))
    transaction.on_commit(lambda: live.publish_state(job, queued))
    transaction.on_commit(queue_dispatch)


def queue_dispatch() -> list[int]:
    """Claim the hosts of every job whose turn it is and send them to workers; the ids of the
    runs started (queue_dispatch_jobs says which builds and baselines too)."""
    return queue_dispatch_jobs().runs


def queue_dispatch_jobs() -> Started:
    """queue_dispatch, saying what it started of every kind of job."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DISPATCH_LOCK_ID])
        started = _claim_turns()
        for kind in KINDS.values():
            for job_id in started.of(kind.name):
                send_on_commit(kind.task, job_id)
    for name in (BUILD, BASELINE):
        if started.of(name):
            log.info("%ss started: %s", name, started.of(name))
    return started


def _claim_turns() -> Started:
    holders = [kind.holder_id for kind in KINDS.values()]
    hosts = list(Host.objects.values_list("pk", "enabled", "cleanup_pending_for_id", *holders))
    blocked = {pk for pk, enabled, *taken in hosts if any(taken) or not enabled}
    # A host that did not answer is left alone until its retry time (jobs.host_reach); then
    # the first job in line on it is sent, and its worker tries the host again.
    blocked |= set(Host.objects.filter(unreachable_retry_at__gt=timezone.now()).values_list("pk", flat=True))
    started = Started()
    for job in _queued_in_order():
        if not job.hosts & blocked and _claim(job):
            started.of(job.kind).append(job.pk)
        blocked |= job.hosts  # first in line on these hosts now: nobody behind may overtake it
        if len(blocked) == len(hosts):
            break
    return started


def _claim(job: QueuedJob) -> bool:
    """Only the dispatcher claims, under its lock: a host found free stays free until now."""
    holder = {KINDS[job.kind].holder_id: job.pk}
    with transaction.atomic():
        if _free_hosts(job.hosts).update(**holder) == len(job.hosts):
            return True
        transaction.set_rollback(True)
        return False


def _free_hosts(host_ids: Iterable[int]) -> QuerySet[Host]:
    unheld = Q(cleanup_pending_for__isnull=True)
    for kind in KINDS.values():
        unheld &= Q(**{f"{kind.holder}__isnull": True})
    return Host.objects.filter(unheld, pk__in=host_ids, enabled=True)


def _queued_in_order() -> Iterator[QueuedJob]:
    """Queued jobs of every kind, oldest first."""
    return heapq.merge(*(kind.queued_in_order() for kind in KINDS.values()), key=lambda job: job.queued_at)


def release_hosts(job: models.Model) -> int:
    """Free the hosts `job` holds; retried through a restart of benchlab's database (a job whose
    hosts stay claimed blocks everything behind it). A conditional update: done twice, the
    second frees nothing more (and counts 0)."""
    kind = kind_of(job)
    held = Host.objects.filter(**{kind.holder: job})
    return with_database_retry(lambda: held.update(**{kind.holder: None}), f"{kind.name} {job.pk}: releasing its hosts")
