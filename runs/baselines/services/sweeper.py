"""fio baselines whose worker died: cleaned up on their host (fio stopped by its PID file, its
file and run directory removed: runs.lab.fio.run.clean_fio_leftovers) and failed, saying so; the host
goes to the next job. Finding them by their silent heartbeat and claiming them are every job's
(runs.jobs.sweeper), called by the same beat task as the runs' and builds' and by a second
delivery of the baseline's task (sweep_baseline).
"""

import logging
from datetime import datetime

from runs.baselines.services.execute import device_identity
from runs.inventory.services.connect import host_connected
from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.jobs.kinds import BASELINE, KINDS
from runs.jobs.sweeper import Recovery, no_sign_of_life, sweep_job
from runs.jobs.transitions import baseline_transition
from runs.lab.errors import LabError
from runs.lab.fio.run import clean_fio_leftovers
from runs.models import BaselineState, DeviceBaseline

log = logging.getLogger(__name__)


def baseline_abandoned(baseline: DeviceBaseline, was: str, last_sign: datetime | None) -> None:
    """The baseline's worker is gone: stop fio and remove what it made, fail the baseline saying
    so, and give its host to the next job."""
    error = f"the worker running fio stopped ({no_sign_of_life(last_sign)}); {_clean_up(baseline)}"
    release_hosts(baseline)
    baseline_transition(baseline=baseline, state=BaselineState.FAILED, error=error)
    log.warning("baseline %s abandoned by its worker: %s", baseline.pk, error)
    queue_dispatch()


BASELINE_RECOVERY = Recovery(KINDS[BASELINE], (BaselineState.RUNNING,), baseline_abandoned, related=("host", "device"))


def sweep_baseline(baseline_id: int) -> bool:
    """End this baseline if its worker died (a second delivery of its task found it silent)."""
    return sweep_job(BASELINE_RECOVERY, baseline_id)


def _clean_up(baseline: DeviceBaseline) -> str:
    try:
        with host_connected(baseline.host) as transport:
            done = clean_fio_leftovers(transport, device_identity(baseline.device), baseline.run_key)
    except LabError as exc:
        log.warning("baseline %s: leftovers not cleaned up on %s: %s", baseline.pk, baseline.host.name, exc)
        return f"what it left on {baseline.host.name} could not be cleaned up ({exc})"
    return "; ".join(done) + f" on {baseline.host.name}" if done else f"nothing of it was left on {baseline.host.name}"
