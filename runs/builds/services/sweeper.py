"""Builds whose worker died: cleaned up on their host and failed. Finding them by their silent
heartbeat and claiming them are every job's (runs.jobs.sweeper), called by the same beat task as
the runs' (tasks.sweep_stale_runs_task) and by a second delivery of the build's task (sweep_build).

A build's compile runs detached on its host, but unlike a measurement nothing is gained by
following it again: the sweeper removes what the dead worker's build left there (its work
directory, staging and verification cluster, its processes: pg_build.clean_build_leftovers),
fails the build saying so, and gives the host to the next job.
"""

import logging
from datetime import datetime

from runs.inventory.services.connect import host_connected
from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.jobs.kinds import BUILD, KINDS
from runs.jobs.sweeper import Recovery, no_sign_of_life, sweep_job
from runs.jobs.transitions import build_transition
from runs.lab.errors import LabError
from runs.lab.pgbuild.build import clean_build_leftovers
from runs.models import BuildState, BuildStepName, PgBuild

log = logging.getLogger(__name__)


def build_abandoned(build: PgBuild, was: str, last_sign: datetime | None) -> None:
    """The build's worker is gone: remove what it left on its host, fail it saying so, and give
    its host to the next job."""
    step = BuildStepName(build.step).label if build.step else "starting"
    error = f"the worker building it stopped while at {step} ({no_sign_of_life(last_sign)}); {_clean_up(build)}"
    release_hosts(build)
    build_transition(build=build, state=BuildState.FAILED, failed_step=build.step, error=error)
    log.warning("build %s abandoned by its worker: %s", build.pk, error)
    queue_dispatch()


BUILD_RECOVERY = Recovery(KINDS[BUILD], (BuildState.BUILDING,), build_abandoned, related=("host",))


def sweep_build(build_id: int) -> bool:
    """End this build if its worker died (a second delivery of its task found it silent)."""
    return sweep_job(BUILD_RECOVERY, build_id)


def _clean_up(build: PgBuild) -> str:
    """Remove what the build left on its host; what was done, in words, for its error."""
    try:
        with host_connected(build.host) as transport:
            clean_build_leftovers(transport, build.job_name)
    except LabError as exc:
        log.warning("build %s: leftovers not cleaned up on %s: %s", build.pk, build.host.name, exc)
        return f"its work directory on {build.host.name} could not be cleaned up ({exc})"
    return f"what it left on {build.host.name} was removed"
