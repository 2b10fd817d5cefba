"""Cancelling a job of any kind (a run, a PostgreSQL build, a fio baseline): who may, what
becomes of the job and its hosts, and what is recorded.

A queued job leaves the queue at once: it moves to cancelled by its kind's own conditional
transition (so a worker starting it at that moment and the cancel never both win), a claim on
its hosts that its worker has not used goes to the next in line, and the dispatcher runs once
that commits. A job a worker is doing is only asked to stop (cancel_requested): that worker's
cancel watch (jobs.cancel_watch) stops what runs on the host, cleans up and releases the
hosts. A job that has ended stays as it is. Either way one audit row says who cancelled it.

What differs from kind to kind is declared once, in CANCELLING: who may (runs.common.roles), how the
kind moves to cancelled (its transition records and publishes the move), its audit row's
action and words.
"""

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.http import HttpRequest

from runs.common.roles import cancel_refusal, owner_refusal
from runs.common.services.audit import audit_record
from runs.jobs import live
from runs.jobs.dispatch import queue_dispatch
from runs.jobs.hooks import job_ended
from runs.jobs.kinds import BASELINE, BUILD, RUN, kind_of
from runs.jobs.transitions import baseline_transition, build_transition, run_transition
from runs.models import AuditAction, BaselineState, BuildState, Host, RunState

# A job row: a Run, a PgBuild or a DeviceBaseline (each has state, is_finished, queued_by).
Job = Any
Refusal = Callable[[Any, Job], str | None]  # (user, job): why the user may not cancel it, or None


class JobRefused(Exception):
    """The user may not cancel this job (or a campaign's jobs); str() says why, for them to read."""


class Cancelled(StrEnum):
    """What a cancel left (its page says it in words: views.cancel)."""

    HAD_ENDED = "had ended"  # nothing to cancel: the job is as it was
    LEFT_QUEUE = "left the queue"  # the job is cancelled
    STOPPING = "stopping"  # its worker was asked to stop it


def _owner_refusal(user: Any, job: Job) -> str | None:
    """Operators cancel the jobs they queued, admins anybody's."""
    return owner_refusal(user, job.queued_by, kind_of(job).name)


@dataclass(frozen=True)
class Cancelling:
    """How cancelling one kind of job differs from the others."""

    # The kind's own move, called as transition(<kind's name>=job, state=…, from_state=…) -> moved?
    # (jobs.transitions.run_transition(run=…), …): it records and publishes the move as the kind does.
    transition: Callable[..., bool]
    cancelled: str  # the kind's cancelled state
    audit_words: str  # the audit message, before "while <the state it was in>"
    refusal: Refusal = _owner_refusal
    audit_action: AuditAction = AuditAction.INVENTORY_CHANGED
    # Whether what follows the job's end (jobs.hooks) is called here when it leaves the queue: a
    # build's transition calls it itself; a run's does not (its worker calls it: Execution.ended).
    hooks_on_leaving_queue: bool = False


CANCELLING: dict[str, Cancelling] = {
    # A run may also be cancelled by its campaign's owner (roles.cancel_refusal), and has its own audit action.
    RUN: Cancelling(
        run_transition, RunState.CANCELLED, "", refusal=cancel_refusal, audit_action=AuditAction.RUN_CANCELLED,
        hooks_on_leaving_queue=True,
    ),
    BUILD: Cancelling(build_transition, BuildState.CANCELLED, "build cancelled "),
    BASELINE: Cancelling(baseline_transition, BaselineState.CANCELLED, "fio baseline cancelled "),
}  # fmt: skip


def job_cancel_refusal(user: Any, job: Job) -> str | None:
    """Why `user` may not cancel `job`, or None (a page shows it beside a disabled button)."""
    return CANCELLING[kind_of(job).name].refusal(user, job)


def job_cancel(job: Job, *, by: Any, request: HttpRequest | None = None) -> Cancelled:
    """Cancel `job` for `by`: at once if it is queued, else ask its worker to stop it; nothing
    if it has ended. JobRefused, and nothing changes, for someone who may not. `job` is
    refreshed (state, cancel_requested) to what the cancel left, which is returned: cancelled
    also when another cancel (a second click) got there first."""
    how = CANCELLING[kind_of(job).name]
    if refusal := how.refusal(by, job):
        raise JobRefused(refusal)
    if job.is_finished:
        return Cancelled.HAD_ENDED
    state_before = job.state
    with transaction.atomic():  # the cancel and its audit row together
        if _leave_queue(job, how):
            _release_unused_claim(job)
            if how.hooks_on_leaving_queue:  # a round whose last runs are cancelled has ended too
                transaction.on_commit(lambda: job_ended(job))
            transaction.on_commit(queue_dispatch)
        else:
            _ask_to_stop(job)
        message = f"{how.audit_words}while {state_before}"
        audit_record(action=how.audit_action, target=job, actor=by, request=request, message=message)
    job.refresh_from_db(fields=["cancel_requested", "state"])
    if not job.is_finished:
        live.publish_job(kind_of(job).name, job.pk, "log", {"line": f"cancel requested by {by.get_username()}"})
    return Cancelled.LEFT_QUEUE if job.state == how.cancelled else Cancelled.STOPPING


def _leave_queue(job: Job, how: Cancelling) -> bool:
    """Queued -> cancelled, by the kind's transition; False if the job is not queued (any more)."""
    kind = kind_of(job)
    return how.transition(**{kind.name: job}, state=how.cancelled, from_state=kind.queued_state)


def _release_unused_claim(job: Job) -> None:
    """The job may hold its hosts already, its worker not yet started: they go to the next in
    line. Once a worker has stamped its start, that worker releases them when it has stopped
    (a run stays queued until its first step, so its cancel can come after that stamp; a build
    or a baseline leaves "queued" with the same stamp, so a claim found here is always unused)."""
    kind = kind_of(job)
    unused = Host.objects.filter(**{kind.holder: job, f"{kind.holder}__started_at__isnull": True})
    unused.update(**{kind.holder: None})


def _ask_to_stop(job: Job) -> None:
    """Its worker's cancel watch sees the flag; a job that ended meanwhile is left alone."""
    kind = kind_of(job)
    unended = kind.model._default_manager.filter(pk=job.pk).exclude(state__in=kind.ended_states)
    unended.update(cancel_requested=True)
