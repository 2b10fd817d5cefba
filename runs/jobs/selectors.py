"""Why a queued job (a run, a PostgreSQL build, a fio baseline) has not started: for each host it
needs, what the host is doing and how many jobs are ahead of it there. Reads only: the queue
itself, and the dispatcher that starts jobs in its order, are runs/jobs/dispatch.py.
"""

from dataclasses import dataclass, replace

from django.db.models import Q, QuerySet

from runs.jobs.kinds import BASELINE, BUILD, KINDS, JobKind
from runs.models import BaselineState, BuildState, DeviceBaseline, Host, PgBuild, Run, RunClient, RunState


def run_holds_its_hosts(run: Run) -> bool:
    """Whether the dispatcher has claimed every host of the run for it (a worker is starting it)."""
    return Host.objects.filter(claimed_by=run).count() == len(run.hosts)


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
    unreachable: str = ""  # the host did not answer when a job was to start: Host.unreachable_note

    @property
    def host_state(self) -> str:
        """What the host is doing, as the queue pages and messages say it ("busy with run 19")."""
        if self.disabled:
            return "is disabled (an admin enables it in the inventory)"
        if self.unreachable:
            return f"is {self.unreachable}"
        if self.cleanup_pending_for is not None:
            return f"waits to be cleaned up after run {self.cleanup_pending_for} (it could not be reached)"
        if self.busy_with is not None:
            return f"busy with run {self.busy_with}"
        if self.busy_with_build is not None:
            return f"busy with build {self.busy_with_build}"
        if self.busy_with_baseline is not None:
            return f"busy with fio baseline {self.busy_with_baseline}"
        return "free"

    def __str__(self) -> str:
        state = f"{self.host} {self.host_state}"
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
        return self.disabled or bool(self.unreachable) or any(holder is not None for holder in taken)


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
            or other.unreachable_since
        )
        earlier = _queued_on(other).filter(pk__lt=run.pk)
        if taken or earlier.exists():  # (taken covers the run that holds it)
            names.append(other.name)
    return tuple(sorted(names))


def build_wait(build: PgBuild) -> list[HostWait]:
    """For a queued build: its host, whether it is disabled or busy, and how many runs and
    builds are ahead of it there. Empty when it holds its host or is not queued."""
    return _one_host_job_wait(build, KINDS[BUILD])


def baseline_wait(baseline: DeviceBaseline) -> list[HostWait]:
    """For a queued fio baseline: its host, whether it is disabled or busy, and how many jobs
    are ahead of it there. Empty when it holds its host or is not queued."""
    return _one_host_job_wait(baseline, KINDS[BASELINE])


def _one_host_job_wait(job: PgBuild | DeviceBaseline, kind: JobKind) -> list[HostWait]:
    if job.state != kind.queued_state:
        return []
    host = Host.objects.get(pk=job.host_id)
    if getattr(host, kind.holder_id) == job.pk:
        return []
    ahead_runs = _queued_on(host).filter(created_at__lt=job.created_at)
    ahead = ahead_runs.exclude(pk=host.claimed_by_id).count() if host.claimed_by_id else ahead_runs.count()
    builds_ahead = _builds_ahead(host, _queued_before(PgBuild, job))
    baselines_ahead = _baselines_ahead(host, _queued_before(DeviceBaseline, job))
    return [_host_wait(host, host.claimed_by_id, ahead, builds_ahead, baselines_ahead)]


def _queued_before(model: type[PgBuild] | type[DeviceBaseline], job: PgBuild | DeviceBaseline) -> QuerySet:
    """Jobs of `model` that came before `job`: by id within its own kind, by time across kinds."""
    if isinstance(job, model):
        return model.objects.filter(pk__lt=job.pk)
    return model.objects.filter(created_at__lt=job.created_at)


def _queued_on(host: Host) -> QuerySet[Run]:
    """Queued runs that need the host, as their server or one of their client hosts."""
    uses_host = Q(server_host=host) | Q(pk__in=RunClient.objects.filter(host=host).values("run_id"))
    return Run.objects.filter(uses_host, state=RunState.QUEUED)


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
        unreachable=host.unreachable_note,
    )


def _builds_ahead(host: Host, earlier: QuerySet[PgBuild]) -> int:
    queued = earlier.filter(host=host, state=BuildState.QUEUED)
    return queued.exclude(pk=host.claimed_by_build_id).count() if host.claimed_by_build_id else queued.count()


def _baselines_ahead(host: Host, earlier: QuerySet[DeviceBaseline]) -> int:
    queued = earlier.filter(host=host, state=BaselineState.QUEUED)
    holder = host.claimed_by_baseline_id
    return queued.exclude(pk=holder).count() if holder else queued.count()
