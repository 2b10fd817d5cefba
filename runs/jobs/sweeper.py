"""Jobs whose worker died, found and taken over: one mechanism for runs, builds and baselines.

The worker doing a job stamps its heartbeat every few seconds (jobs.heartbeat). A killed
worker process runs nothing again: its job would stay running and hold its hosts forever, and a
killed task is not redelivered. Celery beat sweeps every 30 s and a worker that starts sweeps at
once (tasks.sweep_stale_runs_task, tasks.take_over_after_start); a second delivery of a job's task
that finds its worker dead takes that one job over at once (sweep_job).

A job is stale when it is in one of its kind's running states and has given no sign of life for
BENCHLAB_STALE_AFTER_S (or was started and never gave one). Whoever finds it claims it by
stamping a new heartbeat, a conditional UPDATE on the one it read: of two sweepers (or a sweeper
and a worker back to life) only one goes on. What follows is the kind's, declared in its
`Recovery` (bench.services.sweeper for runs, builds.services.sweeper, baselines.services.sweeper): clean
up on the host and fail the job, or hand a run to a worker that reattaches to it.

Two more things a dead process leaves are freed here: hosts still held by a job that has ended
(release_orphans), and hosts claimed for a job whose task was lost (resend_claimed_jobs).
"""

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from runs.jobs.dispatch import queue_dispatch, send_on_commit
from runs.jobs.heartbeat import stale_after_s
from runs.jobs.kinds import KINDS, JobKind
from runs.models import Host

log = logging.getLogger(__name__)

# Given the job this sweeper has claimed, the state it was in and its last sign of life (its
# heartbeat, else its start): clean up after it and end it, or hand it on.
Abandon = Callable[[Any, str, datetime | None], object]


@dataclass(frozen=True)
class Recovery:
    """How a kind of job is taken over once its worker died."""

    kind: JobKind
    running: Sequence[str]  # the states its worker is at it in: silent there, the worker died
    abandon: Abandon
    related: Sequence[str]  # what `abandon` reads with the job (select_related; never empty: that means all)
    prefetched: Sequence[str] = ()
    orphans: bool = True  # whether an ended job of this kind may still hold hosts (release_orphans)


def sweep_stale_jobs(recoveries: Iterable[Recovery]) -> dict[str, list[int]]:
    """sweep_stale for each kind, in the order given; the ids taken over, by kind."""
    return {recovery.kind.name: sweep_stale(recovery) for recovery in recoveries}


def sweep_stale(recovery: Recovery) -> list[int]:
    """Take over every job of this kind whose worker died, and free hosts its ended jobs still
    hold; the ids of the jobs taken over."""
    taken = [job.pk for job in stale_jobs(recovery) if take_over(recovery, job)]
    if recovery.orphans:
        release_orphans(recovery.kind)
    return taken


def sweep_job(recovery: Recovery, job_id: int) -> bool:
    """Take this job over if its worker died (a second delivery of its task found it silent)."""
    job = _stale(recovery).filter(pk=job_id).first()
    return job is not None and take_over(recovery, job)


def stale_jobs(recovery: Recovery) -> list[Any]:
    """The jobs of this kind in a running state whose worker has given no sign of life lately."""
    return list(_stale(recovery).order_by("pk"))


def _stale(recovery: Recovery) -> QuerySet[Any]:
    cutoff = timezone.now() - timedelta(seconds=stale_after_s())
    silent = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    jobs = recovery.kind.model._default_manager.filter(silent, state__in=recovery.running, started_at__isnull=False)
    return jobs.select_related(*recovery.related).prefetch_related(*recovery.prefetched)


def take_over(recovery: Recovery, job: Any) -> bool:
    """Claim the job and do what its kind does with an abandoned one, unless another sweeper (or
    its worker, back to life) moved it since it was read: the heartbeat stamped now is the claim,
    and keeps other sweepers off it while this one cleans up (or until a reattaching worker beats)."""
    was, last_sign = job.state, job.heartbeat_at or job.started_at
    silent = type(job)._default_manager.filter(pk=job.pk, state=was, heartbeat_at=job.heartbeat_at)  # None: IS NULL
    if not silent.update(heartbeat_at=timezone.now()):
        return False
    recovery.abandon(job, was, last_sign)
    return True


def no_sign_of_life(last_sign: datetime | None) -> str:
    """How long a dead worker's job had been silent, in its error: "no sign of life since 14:02:07 UTC"."""
    return f"no sign of life since {timezone.localtime(last_sign):%H:%M:%S %Z}" if last_sign else "no sign of life"


def release_orphans(kind: JobKind) -> int:
    """Free hosts held by a job of this kind that has ended and whose process stopped stamping: a
    worker that died between ending the job and releasing its hosts, or a request removing a
    build that died (builds.services.remove). The number of hosts freed."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_s())
    ended = {f"{kind.holder}__state__in": kind.ended_states, f"{kind.holder}__heartbeat_at__lt": cutoff}
    freed = Host.objects.filter(**ended).update(**{kind.holder: None})
    if freed:
        log.warning("freed %s host(s) held by ended %ss", freed, kind.name)
        queue_dispatch()
    return freed


def resend_claimed_jobs() -> dict[str, list[int]]:
    """Send again the task of each job the dispatcher gave its hosts to and no worker started: it
    may have been lost with the worker that had taken it, or with the broker (a machine restart).
    A job is started once however often its task comes (each kind's execute guard stamps its start
    only from queued); the ids sent again, by kind."""
    return {kind.name: _resend_claimed(kind) for kind in KINDS.values()}


def _resend_claimed(kind: JobKind) -> list[int]:
    holding = Host.objects.filter(**{f"{kind.holder}__isnull": False}).values(kind.holder_id)
    claimed = kind.model._default_manager.filter(pk__in=holding, state=kind.queued_state, started_at__isnull=True)
    ids = list(claimed.order_by("pk").values_list("pk", flat=True))
    for job_id in ids:
        log.warning("%s %s holds its hosts and no worker has started it: its task is sent again", kind.name, job_id)
        send_on_commit(kind.task, job_id)
    return ids
