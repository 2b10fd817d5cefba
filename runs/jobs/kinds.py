"""The kinds of job benchlab runs, each declared once: its model, the Host column that holds a
host for it, its states, and the Celery task that does one.

A new kind of job (a scheduled campaign round, another driver's run) is one more entry here, a
column on Host, a task, and its work (a subclass of runs.jobs.execute.Execution); the dispatcher,
the guard against a second delivery, the heartbeat, the hosts' release and the hooks need no
change (ARCHITECTURE.md, "Adding a job kind")."""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import models

from runs.models import (
    ENDED_BASELINE_STATES,
    ENDED_BUILD_STATES,
    FINAL_STATES,
    BaselineState,
    BuildState,
    DeviceBaseline,
    Host,
    PgBuild,
    Run,
    RunClient,
    RunState,
)

RUN, BUILD, BASELINE = "run", "build", "baseline"


@dataclass(frozen=True)
class QueuedJob:
    """A job waiting for its turn, as the dispatcher sees it."""

    queued_at: datetime
    pk: int
    kind: str
    hosts: frozenset[int]


@dataclass(frozen=True)
class JobKind:
    name: str  # also the job's live stream's (runs.jobs.live.job_stream) and its log's word for it
    model: type[models.Model]
    holder: str  # the Host foreign key that says which job of this kind holds the host
    queued_state: str
    ended_states: Sequence[str]
    task: str  # the Celery task (runs.tasks) that does one job, given its id

    @property
    def holder_id(self) -> str:
        return f"{self.holder}_id"

    def waiting(self) -> models.QuerySet:
        """Queued jobs no worker has started and that hold no host yet: the ones waiting for a
        turn. One holding its hosts waits for its worker; a started one is being done (a run a
        worker has started stays "queued" until its first step, and may have released its hosts
        on its way to failing: it must not be started again)."""
        holding = Host.objects.filter(**{f"{self.holder}__isnull": False}).values(self.holder_id)
        queued = self.model._default_manager.filter(state=self.queued_state, started_at__isnull=True)
        return queued.exclude(pk__in=holding)

    def queued_in_order(self) -> Iterator[QueuedJob]:
        """The waiting jobs by id, each with the hosts it needs."""
        waiting = self.waiting()
        extra = _client_hosts(waiting) if self.model is Run else {}
        host_column = "server_host_id" if self.model is Run else "host_id"
        rows = waiting.order_by("pk").values_list("created_at", "pk", host_column).iterator()
        for queued_at, pk, host in rows:
            yield QueuedJob(queued_at, pk, self.name, frozenset({host} | extra.get(pk, set())))


def _client_hosts(runs: models.QuerySet) -> dict[int, set[int]]:
    """The client hosts of each run (a run holds its server and every client host)."""
    clients: dict[int, set[int]] = {}
    for run_id, host_id in RunClient.objects.filter(run__in=runs).values_list("run_id", "host_id"):
        clients.setdefault(run_id, set()).add(host_id)
    return clients


KINDS: dict[str, JobKind] = {
    RUN: JobKind(RUN, Run, "claimed_by", RunState.QUEUED, FINAL_STATES, "runs.execute_run"),
    BUILD: JobKind(BUILD, PgBuild, "claimed_by_build", BuildState.QUEUED, ENDED_BUILD_STATES, "runs.execute_build"),
    BASELINE: JobKind(
        BASELINE, DeviceBaseline, "claimed_by_baseline", BaselineState.QUEUED, ENDED_BASELINE_STATES,
        "runs.execute_baseline",
    ),
}  # fmt: skip


def kind_of(job: models.Model) -> JobKind:
    """The kind of a job row."""
    return next(kind for kind in KINDS.values() if isinstance(job, kind.model))
