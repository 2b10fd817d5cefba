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
between ending a run and dispatching.
"""

import heapq
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from django.db import connection, transaction
from django.db.models import Q, QuerySet

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
    """Why a queued run (or build) has not started on one of its hosts."""

    host: str
    disabled: bool
    busy_with: int | None  # the run that has the host now (not this one)
    ahead: int  # queued runs before this one that need this host
    cleanup_pending_for: int | None = None  # a run that ended while the host was unreachable
    busy_with_build: int | None = None  # the PostgreSQL build that has the host now (not this one)
    builds_ahead: int = 0  # queued builds before this one on this host
    first_ahead: int | None = None  # the first queued run ahead of this one on this host
    first_ahead_waits_for: tuple[str, ...] = ()  # that run's other hosts, which keep it waiting
    busy_with_baseline: int | None = None  # the fio baseline that has the host now (not this one)
    baselines_ahead: int = 0  # queued fio baselines before this one on this host

    def __str__(self) -> str:
        if self.disabled:
            state = f"{self.host} is disabled (an admin enables it in the inventory)"
        elif self.cleanup_pending_for is not None:
            state = f"{self.host} waits to be cleaned up after run {self.cleanup_pending_for} (unreachable)"
        elif self.busy_with is not None:
            state = f"{self.host} busy with run {self.busy_with}"
        elif self.busy_with_build is not None:
            state = f"{self.host} busy with build {self.busy_with_build}"
        elif self.busy_with_baseline is not None:
            state = f"{self.host} busy with fio baseline {self.busy_with_baseline}"
        else:
            state = f"{self.host} free"
        if self.jobs_ahead:
            return f"{state}; {self.jobs_ahead} ahead of it"
        return state if self.busy else f"{state}; first in line"

    @property
    def jobs_ahead(self) -> int:
        return self.ahead + self.builds_ahead + self.baselines_ahead

    @property
    def busy(self) -> bool:
        """Taken now (by another job, a pending cleanup, or disabled): not first in line but next."""
        taken = (self.busy_with, self.busy_with_build, self.busy_with_baseline, self.cleanup_pending_for)
        return self.disabled or any(holder is not None for holder in taken)


def run_wait(run: Run) -> list[HostWait]:
    """For a queued run: each of its hosts, whether it is disabled or busy, and how many runs
    and builds are ahead of this one there. Empty when the run holds its hosts (a worker is
    starting it) or is not queued."""
    if run.state != RunState.QUEUED or run_holds_its_hosts(run):
        return []
    waits = []
    for host in Host.objects.filter(pk__in=[h.pk for h in run.hosts]).order_by("name"):
        # The run that holds the host is "busy with", not ahead, even before its worker starts.
        ahead_runs = _queued_on(host).filter(pk__lt=run.pk)
        if host.claimed_by_id:
            ahead_runs = ahead_runs.exclude(pk=host.claimed_by_id)
        first = ahead_runs.order_by("pk").select_related("server_host").prefetch_related("run_clients__host").first()
        busy_with = host.claimed_by_id if host.claimed_by_id != run.pk else None
        builds_ahead = _builds_ahead(host, PgBuild.objects.filter(created_at__lt=run.created_at))
        baselines_ahead = _baselines_ahead(host, DeviceBaseline.objects.filter(created_at__lt=run.created_at))
        wait = _host_wait(host, busy_with, ahead_runs.count(), builds_ahead, baselines_ahead)
        if first is not None:  # a free host with a run ahead: the run ahead waits for another host
            wait = replace(wait, first_ahead=first.pk, first_ahead_waits_for=_waits_for(first, host))
        waits.append(wait)
    return waits


def _waits_for(run: Run, free_host: Host) -> tuple[str, ...]:
    """The hosts other than free_host that keep `run` from starting (taken, or others ahead there)."""
    names = []
    for other in run.hosts:
        if other.pk == free_host.pk:
            continue
        taken = (
            not other.enabled
            or other.claimed_by_id
            or other.claimed_by_build_id
            or other.claimed_by_baseline_id
            or other.cleanup_pending_for_id
        )
        earlier = _queued_on(other).filter(pk__lt=run.pk)
        if taken or earlier.exists():  # (taken covers the run that holds it)
            names.append(other.name)
    return tuple(sorted(names))


def build_wait(build: PgBuild) -> list[HostWait]:
    """For a queued build: its host, whether it is disabled or busy, and how many runs and
    builds are ahead of it there. Empty when it holds its host or is not queued."""
    if build.state != BuildState.QUEUED:
        return []
    host = Host.objects.get(pk=build.host_id)
    if host.claimed_by_build_id == build.pk:
        return []
    ahead_runs = _queued_on(host).filter(created_at__lt=build.created_at)
    ahead = ahead_runs.exclude(pk=host.claimed_by_id).count() if host.claimed_by_id else ahead_runs.count()
    builds_ahead = _builds_ahead(host, PgBuild.objects.filter(pk__lt=build.pk))
    baselines_ahead = _baselines_ahead(host, DeviceBaseline.objects.filter(created_at__lt=build.created_at))
    return [_host_wait(host, host.claimed_by_id, ahead, builds_ahead, baselines_ahead)]


def _queued_on(host: Host) -> QuerySet[Run]:
    """Queued runs that need the host, as their server or one of their client hosts."""
    uses_host = Q(server_host=host) | Q(pk__in=RunClient.objects.filter(host=host).values("run_id"))
    return Run.objects.filter(uses_host, state=RunState.QUEUED)


def baseline_wait(baseline: DeviceBaseline) -> list[HostWait]:
    """For a queued fio baseline: its host, whether it is disabled or busy, and how many jobs
    are ahead of it there. Empty when it holds its host or is not queued."""
    if baseline.state != BaselineState.QUEUED:
        return []
    host = Host.objects.get(pk=baseline.host_id)
    if host.claimed_by_baseline_id == baseline.pk:
        return []
    ahead_runs = _queued_on(host).filter(created_at__lt=baseline.created_at)
    ahead = ahead_runs.exclude(pk=host.claimed_by_id).count() if host.claimed_by_id else ahead_runs.count()
    builds_ahead = _builds_ahead(host, PgBuild.objects.filter(created_at__lt=baseline.created_at))
    baselines_ahead = _baselines_ahead(host, DeviceBaseline.objects.filter(pk__lt=baseline.pk))
    return [_host_wait(host, host.claimed_by_id, ahead, builds_ahead, baselines_ahead)]


def _host_wait(host: Host, busy_with: int | None, ahead: int, builds_ahead: int, baselines_ahead: int) -> HostWait:
    return HostWait(
        host=host.name,
        disabled=not host.enabled,
        busy_with=busy_with,
        ahead=ahead,
        cleanup_pending_for=host.cleanup_pending_for_id,
        busy_with_build=host.claimed_by_build_id,
        builds_ahead=builds_ahead,
        busy_with_baseline=host.claimed_by_baseline_id,
        baselines_ahead=baselines_ahead,
    )


def _builds_ahead(host: Host, earlier: QuerySet[PgBuild]) -> int:
    queued = earlier.filter(host=host, state=BuildState.QUEUED)
    return queued.exclude(pk=host.claimed_by_build_id).count() if host.claimed_by_build_id else queued.count()


def _baselines_ahead(host: Host, earlier: QuerySet[DeviceBaseline]) -> int:
    queued = earlier.filter(host=host, state=BaselineState.QUEUED)
    holder = host.claimed_by_baseline_id
    return queued.exclude(pk=holder).count() if holder else queued.count()


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
