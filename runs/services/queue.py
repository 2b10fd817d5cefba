"""Runs start in queue order on every host they need (FIFO), exactly one run at a time per host.

The dispatcher walks the queued runs in queue order (by id) and starts each run that is first
in line on every host it needs, when those hosts are free and enabled: it claims them (sets
`Host.claimed_by`) and hands the run to a worker once the claim commits. A run that is not
first in line blocks its hosts for every run behind it, so a run needing two hosts waits its
turn on both and is never overtaken, and a disabled host holds its runs (visibly: run_wait).

PostgreSQL builds (services.builds) share the line: a host takes one job at a time, a run or a
build (`Host.claimed_by_build`), and runs and builds queued for the same host start in the order
they were queued (by the time they were queued; runs among themselves by id, as ever). Raw device
baselines (fio, services.baselines) are a third kind in the same line (`Host.claimed_by_baseline`).

Dispatching is serialised by a PostgreSQL advisory lock, so any number of web processes and
workers may call it at once. It runs whenever a turn may have come: a run queued, a run ended,
a queued run cancelled, a host enabled; and periodically (Celery beat) in case a process died
between ending a run and dispatching, and to try again a host that did not answer
(services.host_reach: its jobs wait, in their order, until it answers or their limit passes).
"""

import heapq
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from runs.models import BaselineState, BuildState, DeviceBaseline, Host, PgBuild, Run, RunClient, RunState
from runs.services.db_retry import with_database_retry

log = logging.getLogger(__name__)

# Any fixed number, unique among benchlab's advisory locks (pg_advisory_xact_lock takes a bigint).
DISPATCH_LOCK_ID = 0x62656E63686C6162  # "benchlab"


@dataclass(frozen=True)
class Started:
    """What one dispatch started: runs, builds and baselines, by id."""

    runs: list[int] = field(default_factory=list)
    builds: list[int] = field(default_factory=list)
    baselines: list[int] = field(default_factory=list)


def queue_dispatch() -> list[int]:
    """Claim the hosts of every run and build whose turn it is and send them to workers; the ids
    of the runs started (queue_dispatch_jobs says which builds too)."""
    return queue_dispatch_jobs().runs


def queue_dispatch_jobs() -> Started:
    """queue_dispatch, saying what it started of every kind of job."""
    from runs.tasks import execute_baseline, execute_build, execute_run  # tasks import services: avoid a cycle

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DISPATCH_LOCK_ID])
        started = _claim_turns()
        # A worker must never see a claim that is not committed yet.
        for run_id in started.runs:
            transaction.on_commit(partial(execute_run.delay, run_id))
        for build_id in started.builds:
            transaction.on_commit(partial(execute_build.delay, build_id))
        for baseline_id in started.baselines:
            transaction.on_commit(partial(execute_baseline.delay, baseline_id))
    if started.builds:
        log.info("builds started: %s", started.builds)
    if started.baselines:
        log.info("fio baselines started: %s", started.baselines)
    return started


RUN, BUILD, BASELINE = "run", "build", "baseline"
# The Host column that says which job of each kind holds the host.
_HOLDER = {RUN: "claimed_by_id", BUILD: "claimed_by_build_id", BASELINE: "claimed_by_baseline_id"}


@dataclass(frozen=True)
class _Job:
    queued_at: datetime
    pk: int
    kind: str  # RUN, BUILD or BASELINE
    hosts: frozenset[int]


def _claim_turns() -> Started:
    hosts = list(Host.objects.values_list("pk", "enabled", "cleanup_pending_for_id", *_HOLDER.values()))
    blocked = {pk for pk, enabled, *taken in hosts if any(taken) or not enabled}
    # A host that did not answer is left alone until its retry time (services.host_reach); then
    # the first job in line on it is sent, and its worker tries the host again.
    blocked |= set(Host.objects.filter(unreachable_retry_at__gt=timezone.now()).values_list("pk", flat=True))
    started = Started()
    started_of = {RUN: started.runs, BUILD: started.builds, BASELINE: started.baselines}
    for job in _queued_in_order():
        if not job.hosts & blocked and _claim(job):
            started_of[job.kind].append(job.pk)
        blocked |= job.hosts  # first in line on these hosts now: nobody behind may overtake it
        if len(blocked) == len(hosts):
            break
    return started


def _claim(job: _Job) -> bool:
    """Only the dispatcher claims, under its lock: a host found free stays free until now."""
    holder = {_HOLDER[job.kind]: job.pk}
    with transaction.atomic():
        if _free_hosts(job.hosts).update(**holder) == len(job.hosts):
            return True
        transaction.set_rollback(True)
        return False


def _free_hosts(host_ids: Iterable[int]) -> QuerySet[Host]:
    free = Host.objects.filter(
        pk__in=host_ids,
        claimed_by__isnull=True,
        claimed_by_build__isnull=True,
        claimed_by_baseline__isnull=True,
        cleanup_pending_for__isnull=True,
    )
    return free.filter(enabled=True)


def _queued_in_order() -> Iterator[_Job]:
    """Queued runs, builds and baselines, oldest first. Each kind keeps its own order (runs by
    id, as before builds existed); the kinds are merged by the time they were queued."""
    return heapq.merge(_queued_runs(), _queued_builds(), _queued_baselines(), key=lambda job: job.queued_at)


def _queued_runs() -> Iterator[_Job]:
    # Queued runs that hold their hosts already are waiting for a worker, not for a turn; a run
    # a worker has started stays "queued" until its first step, and may have released its
    # hosts on its way to failing: neither may be started again.
    holding = Host.objects.filter(claimed_by__isnull=False).values("claimed_by_id")
    queued = Run.objects.filter(state=RunState.QUEUED, started_at__isnull=True).exclude(pk__in=holding)
    clients: dict[int, set[int]] = {}
    for run_id, host_id in RunClient.objects.filter(run__in=queued).values_list("run_id", "host_id"):
        clients.setdefault(run_id, set()).add(host_id)
    for queued_at, pk, server in queued.order_by("pk").values_list("created_at", "pk", "server_host_id").iterator():
        yield _Job(queued_at, pk, RUN, frozenset({server} | clients.get(pk, set())))


def _queued_builds() -> Iterator[_Job]:
    # A build holding its host is waiting for its worker; a started one is building.
    holding = Host.objects.filter(claimed_by_build__isnull=False).values("claimed_by_build_id")
    queued = PgBuild.objects.filter(state=BuildState.QUEUED, started_at__isnull=True).exclude(pk__in=holding)
    for queued_at, pk, host in queued.order_by("pk").values_list("created_at", "pk", "host_id").iterator():
        yield _Job(queued_at, pk, BUILD, frozenset({host}))


def _queued_baselines() -> Iterator[_Job]:
    # As builds: one holding its host waits for its worker; a started one is running.
    holding = Host.objects.filter(claimed_by_baseline__isnull=False).values("claimed_by_baseline_id")
    queued = DeviceBaseline.objects.filter(state=BaselineState.QUEUED, started_at__isnull=True).exclude(pk__in=holding)
    for queued_at, pk, host in queued.order_by("pk").values_list("created_at", "pk", "host_id").iterator():
        yield _Job(queued_at, pk, BASELINE, frozenset({host}))


def run_release_hosts(*, run: Run) -> int:
    """Free the run's hosts; retried through a restart of benchlab's database (a run whose
    hosts stay claimed blocks everything behind it). A conditional update: done twice, the
    second frees nothing more (and counts 0)."""
    release = Host.objects.filter(claimed_by=run)
    return with_database_retry(lambda: release.update(claimed_by=None), f"run {run.pk}: releasing its hosts")


def build_release_host(*, build: PgBuild) -> int:
    """Free the build's host (retried through a restart of benchlab's database, like a run's);
    done twice, the second frees nothing."""
    release = Host.objects.filter(claimed_by_build=build)
    return with_database_retry(lambda: release.update(claimed_by_build=None), f"build {build.pk}: releasing its host")


def baseline_release_host(*, baseline: DeviceBaseline) -> int:
    """Free the baseline's host (retried through a restart of benchlab's database); done twice,
    the second frees nothing."""
    release = Host.objects.filter(claimed_by_baseline=baseline)
    what = f"baseline {baseline.pk}: releasing its host"
    return with_database_retry(lambda: release.update(claimed_by_baseline=None), what)
