"""A run whose worker died while it was warming up, measuring or collecting, finished by another worker.

pgbench runs detached on the lab host, so it goes on when the worker that started it is
killed. The sweeper finds such a run by its silent heartbeat, leaves it in its state marked as
waiting for a worker (Run.worker is REATTACH_PENDING), and sends runs.reattach_run. The worker
that gets it takes the run (only one can), beats for it, follows pgbench to its end, collects
and stores the results and cleans up on the host (runs/lab/benchmark/resume.py), and ends the run.

pgbench's progress is followed on from the byte its first worker had stored by its last
heartbeat (Run.progress_offset); the few seconds after it are read again, and stored per second
(bench.services.samples upserts them), so none is lost and none doubled. With several client hosts,
each one's pgbench is followed again from its first line (their totals are stored per second
too). If the host no longer has the run's record or pgbench's files, what is left of the run is
removed by its run key (runs/lab/benchmark/abandon.py) and the run fails saying why.
"""

import logging
import socket
from functools import partial

from django.utils import timezone

from runs.bench.services.execute import (
    Ending,
    RunExecution,
    close_hosts,
    connect_hosts,
    ending_said,
    failure,
    result_ending,
    run_facts,
    run_for_worker,
    store_when_collected,
    with_pending_cleanup,
)
from runs.bench.services.lab_specs import benchmark_spec
from runs.bench.services.observer import RunObserver
from runs.bench.services.pending_cleanup import clean_up_run_hosts
from runs.bench.services.results import store_log
from runs.bench.services.reuse import record_kept
from runs.bench.services.sweeper import REATTACH_PENDING, REATTACHABLE
from runs.inventory.services.connect import host_connect
from runs.jobs import live
from runs.jobs.cancel_watch import CancelWatch
from runs.jobs.execute import drive_to_end
from runs.lab.benchmark.resume import resume_benchmark
from runs.lab.storage.kept import KeptSetup
from runs.models import Device, Run, RunState

log = logging.getLogger(__name__)


def run_reattach(*, run_id: int) -> str:
    """Finish the run the sweeper handed over; "not reattached" if it is not waiting for a
    worker any more (another one took it, or it ended), else the state it ended in."""
    run = run_for_worker(run_id)
    if not _take(run):
        return "not reattached"
    return drive_to_end(RunReattach(run))


class RunReattach(RunExecution):
    """A run taken over from its dead worker: its end is a run's (jobs.execute.drive_to_end), its
    work following pgbench to its end instead of starting it."""

    def work(self) -> Ending:
        return _reattach(self.job)


def _take(run: Run) -> bool:
    """This worker's from now on, unless another one was quicker."""
    worker = f"{socket.gethostname()} (reattached)"
    waiting = Run.objects.filter(pk=run.pk, state__in=REATTACHABLE, worker=REATTACH_PENDING)
    if not waiting.update(worker=worker, heartbeat_at=timezone.now()):
        return False
    run.refresh_from_db(fields=["state", "worker", "heartbeat_at", "cancel_requested"])
    return True


def _reattach(run: Run) -> Ending:
    observer = RunObserver(run)
    with CancelWatch(run, observer.cancel_now):
        return _reattach_watched(run, observer)


def _reattach_watched(run: Run, observer: RunObserver) -> Ending:
    observer.current_step = run.state  # where a failure from here on happened
    several = len(run.client_host_list) > 1  # each client's pgbench is followed again from its start
    where = "on each client host from its start" if several else f"from byte {run.progress_offset}"
    note = f"its worker stopped; {run.worker} follows {run.driver} again {where}"
    live.publish(run.pk, "log", {"line": note})
    log.warning("run %s: %s", run.pk, note)
    taken_over, reused_from = _taken_over_setup(run)
    try:
        spec = benchmark_spec(run)
        transport, clients = connect_hosts(run)
    except Exception as exc:  # noqa: BLE001 - unreachable, a refused key: the run fails saying so
        return _failed(run, observer, exc)
    ending: Ending | None = None
    try:
        store_when_collected(run, observer, run_facts(run, transport, clients, reused_from))
        connect = partial(host_connect, run.server_host)  # the follower reconnects with it
        result = resume_benchmark(
            transport, connect, spec, observer, clients=clients, offset=run.progress_offset, taken_over=taken_over
        )
    except Exception as exc:  # noqa: BLE001 - every failure ends the run as failed, with its reason
        ending = (RunState.CANCELLED, {}) if observer.cancelled else _failed(run, observer, exc)
    finally:
        pending = close_hosts(run, spec, transport, clients)  # a host that stayed away: cleaned up later
        if taken_over is not None:
            record_kept(run, None)  # released with the run, or discarded by the cleanup
    if ending is not None:
        store_log(run, observer, ending_said(ending))
    else:  # its results were stored before the cleanup (store_when_collected)
        ending = result_ending(result, observer)
    return with_pending_cleanup(ending, pending)


def _taken_over_setup(run: Run) -> tuple[KeptSetup | None, int | None]:
    """The setup an earlier run kept on this run's device, if it is still recorded: the run took
    it over (its storage is mounted under the earlier run's name), or failed to discard it."""
    kept = Device.objects.filter(pk=run.device_id).values_list("kept_setup", flat=True).first()
    if not kept:
        return None, None
    try:
        return KeptSetup.from_json(kept.get("setup") or {}), kept.get("run")
    except ValueError:
        log.warning("run %s: the kept setup recorded on its device cannot be read: %r", run.pk, kept)
        return None, None


def _failed(run: Run, observer: RunObserver, exc: Exception) -> Ending:
    """Remove what is left of the run on its hosts, and fail it with the reason and what was cleaned."""
    notes = clean_up_run_hosts(run)
    state, fields = failure(observer, exc)
    stage = RunState(observer.current_step).label
    fields["error"] = f"its worker stopped while {stage}, and reattaching failed: {exc}; " + "; ".join(notes)
    return state, fields
