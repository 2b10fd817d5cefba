"""fio baselines whose worker died: found by their stale heartbeat, cleaned up on their host
(fio stopped by its PID file, its file and run directory removed: runs.lab.fio.clean_fio_leftovers)
and failed, saying so; the host goes to the next job. Called by the same beat task as the runs'
and builds' sweepers, and by a second delivery of the baseline's task.
"""

import logging
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.lab.errors import LabError
from runs.lab.fio import clean_fio_leftovers
from runs.models import ENDED_BASELINE_STATES, BaselineState, DeviceBaseline, Host
from runs.services.baseline_execute import device_identity
from runs.services.baselines import baseline_transition
from runs.services.heartbeat import stale_after_s
from runs.services.lab_access import host_connect

log = logging.getLogger(__name__)


def stale_baselines() -> list[DeviceBaseline]:
    cutoff = timezone.now() - timedelta(seconds=stale_after_s())
    silent = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    baselines = DeviceBaseline.objects.filter(silent, state=BaselineState.RUNNING, started_at__isnull=False)
    return list(baselines.select_related("host", "device").order_by("pk"))


def sweep_stale_baselines() -> list[int]:
    """End every baseline whose worker died, and free hosts held by an ended baseline whose
    process stopped stamping; the ids of the baselines ended."""
    ended = [baseline.pk for baseline in stale_baselines() if _take_over(baseline)]
    cutoff = timezone.now() - timedelta(seconds=stale_after_s())
    orphans = Host.objects.filter(
        claimed_by_baseline__state__in=ENDED_BASELINE_STATES, claimed_by_baseline__heartbeat_at__lt=cutoff
    )
    if orphans.update(claimed_by_baseline=None):
        queue_dispatch()
    return ended


def sweep_baseline(baseline_id: int) -> bool:
    """End this baseline if its worker died (a second delivery of its task found it silent)."""
    baseline = next((b for b in stale_baselines() if b.pk == baseline_id), None)
    return baseline is not None and _take_over(baseline)


def _take_over(baseline: DeviceBaseline) -> bool:
    """The heartbeat stamped now is this sweeper's claim: another sweeper (or the worker, back
    to life) that moved the baseline since it was read makes this one step back."""
    silent = DeviceBaseline.objects.filter(pk=baseline.pk, state=BaselineState.RUNNING)
    silent = silent.filter(heartbeat_at=baseline.heartbeat_at)
    last_sign = baseline.heartbeat_at or baseline.started_at
    if not silent.update(heartbeat_at=timezone.now()):
        return False
    since = f"no sign of life since {timezone.localtime(last_sign):%H:%M:%S %Z}" if last_sign else "no sign of life"
    error = f"the worker running fio stopped ({since}); {_clean_up(baseline)}"
    release_hosts(baseline)
    baseline_transition(baseline=baseline, state=BaselineState.FAILED, error=error)
    log.warning("baseline %s abandoned by its worker: %s", baseline.pk, error)
    queue_dispatch()
    return True


def _clean_up(baseline: DeviceBaseline) -> str:
    try:
        transport = host_connect(baseline.host)
        try:
            done = clean_fio_leftovers(transport, device_identity(baseline.device), baseline.run_key)
        finally:
            transport.close()
    except LabError as exc:
        log.warning("baseline %s: leftovers not cleaned up on %s: %s", baseline.pk, baseline.host.name, exc)
        return f"what it left on {baseline.host.name} could not be cleaned up ({exc})"
    return "; ".join(done) + f" on {baseline.host.name}" if done else f"nothing of it was left on {baseline.host.name}"
