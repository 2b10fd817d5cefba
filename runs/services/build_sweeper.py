"""Builds whose worker died: found by their stale heartbeat, cleaned up on their host and failed.

A build's compile runs detached on its host, but unlike a measurement nothing is gained by
following it again: the sweeper removes what the dead worker's build left there (its work
directory, staging and verification cluster, its processes: pg_build.clean_build_leftovers),
fails the build saying so, and gives the host to the next job. Called by the same beat task as
the runs' sweeper (tasks.sweep_stale_runs_task), and by a second delivery of the build's task.
"""

import logging
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.lab.errors import LabError
from runs.lab.pg_build import clean_build_leftovers
from runs.models import ENDED_BUILD_STATES, BuildState, BuildStepName, Host, PgBuild
from runs.services.builds import build_transition
from runs.services.heartbeat import stale_after_s
from runs.services.lab_access import host_connect

log = logging.getLogger(__name__)


def stale_builds() -> list[PgBuild]:
    """Building builds whose worker has not given a sign of life lately."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_s())
    silent = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    builds = PgBuild.objects.filter(silent, state=BuildState.BUILDING, started_at__isnull=False)
    return list(builds.select_related("host").order_by("pk"))


def sweep_stale_builds() -> list[int]:
    """End every build whose worker died, and free hosts held by an ended build's dead process;
    the ids of the builds ended."""
    ended = [build.pk for build in stale_builds() if _take_over(build)]
    release_orphan_claims()
    return ended


def sweep_build(build_id: int) -> bool:
    """End this build if its worker died (a second delivery of its task found it silent)."""
    build = next((b for b in stale_builds() if b.pk == build_id), None)
    return build is not None and _take_over(build)


def _take_over(build: PgBuild) -> bool:
    """Clean up after the build and fail it, unless another sweeper (or its worker, back to
    life) moved it since it was read: the heartbeat stamped now is this sweeper's claim."""
    silent = PgBuild.objects.filter(pk=build.pk, state=BuildState.BUILDING)
    silent = silent.filter(heartbeat_at=build.heartbeat_at) if build.heartbeat_at else silent.filter(heartbeat_at=None)
    last_sign = build.heartbeat_at or build.started_at
    if not silent.update(heartbeat_at=timezone.now()):
        return False
    step = BuildStepName(build.step).label if build.step else "starting"
    since = f"no sign of life since {timezone.localtime(last_sign):%H:%M:%S %Z}" if last_sign else "no sign of life"
    error = f"the worker building it stopped while at {step} ({since}); {_clean_up(build)}"
    release_hosts(build)
    build_transition(build=build, state=BuildState.FAILED, failed_step=build.step, error=error)
    log.warning("build %s abandoned by its worker: %s", build.pk, error)
    queue_dispatch()
    return True


def _clean_up(build: PgBuild) -> str:
    """Remove what the build left on its host; what was done, in words, for its error."""
    try:
        transport = host_connect(build.host)
        try:
            clean_build_leftovers(transport, build.job_name)
        finally:
            transport.close()
    except LabError as exc:
        log.warning("build %s: leftovers not cleaned up on %s: %s", build.pk, build.host.name, exc)
        return f"its work directory on {build.host.name} could not be cleaned up ({exc})"
    return f"what it left on {build.host.name} was removed"


def release_orphan_claims() -> int:
    """Hosts held by a build that has ended and whose process stopped stamping: a worker that
    died between ending the build and releasing, or a request removing a build that died."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_s())
    orphans = Host.objects.filter(
        claimed_by_build__state__in=ENDED_BUILD_STATES, claimed_by_build__heartbeat_at__lt=cutoff
    )
    freed = orphans.update(claimed_by_build=None)
    if freed:
        log.warning("freed %s host(s) held by ended builds", freed)
        queue_dispatch()
    return freed
