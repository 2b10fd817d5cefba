"""Removing a done PostgreSQL build: its prefix on the host, then its install in the inventory.

Done at once, in the request, not queued: it is one `rm -rf` of a prefix that takes seconds, and
the person asking learns there and then whether it worked (a host that does not answer: a clear
error, and nothing changed). It still takes its turn on the host like any job: the build claims
its host for the removal (a host busy with a run or a build is refused, so no file is deleted
under a measurement), and the claim is released whatever happens.

A run that is queued or running with the build's install refuses the removal. Once the prefix is
gone, the install is deleted if no run ever used it; otherwise it is kept for those runs' history
(PgInstall.removed_at) and offered to no new run.
"""

from typing import Any

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from runs.builds.services.builds import BuildRefused, build_refusal
from runs.common.services.audit import audit_record
from runs.inventory.services.connect import host_connected
from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.jobs.transitions import build_transition
from runs.lab.errors import LabError
from runs.lab.pgbuild.build import remove_build
from runs.models import FINAL_STATES, AuditAction, BuildState, Host, PgBuild, PgInstall, Run


class BuildRemoveFailed(Exception):
    """The host could not remove the prefix (unreachable, refused): nothing changed; str() says why."""


def build_remove(*, build: PgBuild, by: Any, request: HttpRequest | None = None) -> str:
    """Remove the build's prefix from its host and mark it removed; what became of its install,
    in words. BuildRefused when it may not be removed now (who asks, its state, runs that use
    it, a busy host); BuildRemoveFailed when the host did not do it."""
    if refusal := build_refusal(by, build, "remove"):
        raise BuildRefused(refusal)
    build.refresh_from_db()
    if refusal := _state_refusal(build):
        raise BuildRefused(refusal)
    _claim_host(build)
    try:
        install = _hide_install(build)
        try:
            _remove_prefix(build)
        except LabError as exc:
            PgInstall.objects.filter(pk=install.pk).update(removed_at=None)  # offered again, as before
            raise BuildRemoveFailed(
                f"{build.host.name} did not remove {build.prefix}: {exc}. Nothing changed; try again when it answers."
            ) from exc
        return _forget(build, install, by, request)
    finally:
        release_hosts(build)
        queue_dispatch()


def _state_refusal(build: PgBuild) -> str | None:
    if build.state == BuildState.DONE and build.pg_install_id is not None:
        return None
    if build.state == BuildState.REMOVED:
        return f"Build {build.pk} was removed already."
    if build.state in (BuildState.QUEUED, BuildState.BUILDING):
        return f"Build {build.pk} is {build.get_state_display()}: cancel it instead."
    if build.state == BuildState.DONE:
        return f"Build {build.pk} has no registered install (it was deleted from the inventory): nothing to remove."
    return f"Build {build.pk} {build.get_state_display()} and left nothing on {build.host.name}: nothing to remove."


def _claim_host(build: PgBuild) -> None:
    """The host, for the removal: taken like the dispatcher takes it (a conditional update),
    so no run or build starts there meanwhile. The stamp lets the sweeper free a claim whose
    process died (runs.jobs.sweeper.release_orphans)."""
    free = Host.objects.filter(
        pk=build.host_id,
        claimed_by__isnull=True,
        claimed_by_build__isnull=True,
        claimed_by_baseline__isnull=True,
        cleanup_pending_for__isnull=True,
    )
    PgBuild.objects.filter(pk=build.pk).update(heartbeat_at=timezone.now())
    if free.update(claimed_by_build=build):
        return
    host = Host.objects.get(pk=build.host_id)
    if host.cleanup_pending_for_id:
        busy = f"waits to be cleaned up after run {host.cleanup_pending_for_id} (it could not be reached)"
    elif host.claimed_by_id:
        busy = f"is busy with run {host.claimed_by_id}"
    elif host.claimed_by_baseline_id:
        busy = f"is busy with fio baseline {host.claimed_by_baseline_id}"
    else:
        busy = f"is busy with build {host.claimed_by_build_id}"
    raise BuildRefused(
        f"{host.name} {busy}: remove the build when it is free (deleting files beside a benchmark would disturb it)."
    )


def _hide_install(build: PgBuild) -> PgInstall:
    """Offer the install to no new run, unless a run is queued or running with it (refused)."""
    with transaction.atomic():
        install = PgInstall.objects.select_for_update().filter(build=build).first()
        if install is None:  # deleted from the inventory meanwhile
            raise BuildRefused(f"Build {build.pk} has no registered install any more: nothing to remove.")
        active = Run.objects.filter(pg_install=install).exclude(state__in=FINAL_STATES).order_by("pk")
        using = [f"run {run.pk} ({run.get_state_display()})" for run in active[:10]]
        if using:
            raise BuildRefused(
                f"{', '.join(using)} {'uses' if len(using) == 1 else 'use'} this build's install: remove the build "
                "once they have ended, or cancel them."
            )
        install.removed_at = timezone.now()
        install.save(update_fields=["removed_at", "updated_at"])
    return install


def _remove_prefix(build: PgBuild) -> None:
    with host_connected(build.host) as transport:
        remove_build(transport, build.prefix)


def _forget(build: PgBuild, install: PgInstall, by: Any, request: HttpRequest | None) -> str:
    """The prefix is gone: the build is removed, its install deleted or kept hidden."""
    with transaction.atomic():
        used = Run.objects.filter(pg_install=install).count()
        if used:
            outcome = f"its install is kept for the {used} run{'s' if used != 1 else ''} that used it, offered to none"
        else:
            install.delete()
            outcome = "its install is deleted from the inventory (no run used it)"
        build_transition(build=build, state=BuildState.REMOVED, from_state=BuildState.DONE, removed_at=timezone.now())
        audit_record(
            action=AuditAction.INVENTORY_DELETED,
            target=build,
            actor=by,
            request=request,
            message=f"build removed: {build.prefix} removed on {build.host.name}; {outcome}",
        )
    return f"Build {build.pk} removed: {build.prefix} is gone from {build.host.name}; {outcome}."
