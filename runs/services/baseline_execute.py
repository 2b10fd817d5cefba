"""Execute one queued fio baseline on its host: the dispatcher (services.queue) has claimed the
host for it; this drives runs.lab.fio.run_fio, stores the results, and makes sure the baseline
ends done, failed or cancelled and its host is released whatever happens. run_fio removes what
it made on the host on every path; a worker that dies is services.baseline_sweeper's.
"""

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.utils import timezone

from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.lab.errors import CommandFailed, tail
from runs.lab.fio import FioCancelled, FioResult, run_fio
from runs.lab.storage_checks import DeviceIdentity
from runs.models import BaselineState, Device, DeviceBaseline, Host
from runs.models.inventory import benchlab_data_dirs
from runs.services.baseline_observer import BaselineObserver, baseline_cancel_requested
from runs.services.baselines import baseline_device_refusal, baseline_settings_of, baseline_transition
from runs.services.cancel_watch import CancelWatch
from runs.services.heartbeat import beating, heartbeat_every_s, stale_after_s
from runs.services.host_reach import NOT_STARTED, HostAway
from runs.services.lab_access import host_connect, host_connect_for_run

log = logging.getLogger(__name__)
FAILED_OUTPUT_LINES = 40
CLOCK_EVERY_S = 1.0  # the page's step and progress: a point a second

Ending = tuple[BaselineState, dict[str, Any]]


def device_identity(device: Device) -> DeviceIdentity:
    """The lab layer's view of the device (it never reads the database)."""
    return DeviceIdentity(
        path=device.path,
        wipe_allowed=device.wipe_allowed,
        serial=device.serial,
        size_bytes=device.capacity_bytes,
        protected_dirs=benchlab_data_dirs(),
    )


def baseline_execute(*, baseline_id: int) -> str:
    """Measure it. Returns "waiting" (it does not hold its host: the dispatcher sends it again),
    "running" (another worker is at it), "abandoned" (the worker that started it died:
    services.baseline_sweeper ends it), or the state it ended in."""
    baseline = DeviceBaseline.objects.select_related("host", "device", "queued_by").get(pk=baseline_id)
    if baseline.is_finished:
        return baseline.state
    if baseline.state != BaselineState.QUEUED or baseline.started_at is not None:
        return "running" if baseline_has_live_worker(baseline) else "abandoned"
    if not Host.objects.filter(pk=baseline.host_id, claimed_by_baseline=baseline).exists():
        return "waiting"
    if refusal := baseline_device_refusal(baseline.device):  # the inventory changed after it was queued
        release_hosts(baseline)
        baseline_transition(baseline=baseline, state=BaselineState.FAILED, error=refusal)
        queue_dispatch()
        return baseline.state
    if not _mark_started(baseline):
        return baseline.state  # cancelled while queued; the cancel gave its host to the next in line
    return _drive_to_end(baseline)


def baseline_has_live_worker(baseline: DeviceBaseline) -> bool:
    stamp = baseline.heartbeat_at
    return stamp is not None and timezone.now() - stamp < timedelta(seconds=stale_after_s())


def _mark_started(baseline: DeviceBaseline) -> bool:
    now = timezone.now()
    fields = {"started_at": now, "worker": socket.gethostname(), "heartbeat_at": now}
    if baseline_transition(baseline=baseline, state=BaselineState.RUNNING, from_state=BaselineState.QUEUED, **fields):
        return True
    baseline.refresh_from_db(fields=["state", "started_at", "worker"])
    return False


def _drive_to_end(baseline: DeviceBaseline) -> str:
    observer = BaselineObserver(baseline, baseline_settings_of(baseline))
    clock = beating(observer.tick, f"baseline {baseline.pk} clock", CLOCK_EVERY_S)
    try:
        with baseline_heartbeat(baseline, observer), clock:
            ending = _measure(baseline, observer)
    except Exception as exc:
        log.exception("baseline %s: benchlab failed", baseline.pk)
        ending = BaselineState.FAILED, {"error": f"benchlab failed: {exc!r}"}
    finally:
        release_hosts(baseline)
    state, fields = ending
    fields = {"log": observer.log_text(), **fields}
    if state == BaselineState.DONE:
        fields |= {"step": "", "progress": 100.0}
    if not baseline_transition(baseline=baseline, state=state, from_state=BaselineState.RUNNING, **fields):
        baseline.refresh_from_db(fields=["state"])
    queue_dispatch()
    return baseline.state


def _measure(baseline: DeviceBaseline, observer: BaselineObserver) -> Ending:
    if observer.check_cancel():  # cancelled while its worker was starting it: the host is not touched
        return BaselineState.CANCELLED, {}
    try:
        settings = baseline_settings_of(baseline)
        transport = host_connect_for_run(baseline.host)
    except HostAway as away:  # nothing started: it waits for the host (services.host_reach)
        return (BaselineState.FAILED, {"error": away.failure}) if away.overdue else (BaselineState.QUEUED, NOT_STARTED)
    except Exception as exc:  # noqa: BLE001 - e.g. a refused host key
        return failure(baseline, observer, exc)
    pk = baseline.pk
    watch = CancelWatch(pk, observer.cancel_now, requested=lambda: baseline_cancel_requested(pk), what="baseline")
    try:
        with watch:
            result = run_fio(
                transport,
                lambda: host_connect(baseline.host),
                device_identity(baseline.device),
                settings,
                baseline.run_key,
                on_started=observer.started,
                on_line=observer.line,
            )
    except FioCancelled:
        return BaselineState.CANCELLED, {}
    except Exception as exc:  # noqa: BLE001 - every failure ends the baseline as failed, with fio's reason
        return (BaselineState.CANCELLED, {}) if observer.cancelled else failure(baseline, observer, exc)
    finally:
        transport.close()
    if observer.cancelled:  # fio had finished when the cancel came: its results are not kept
        return BaselineState.CANCELLED, {}
    return BaselineState.DONE, result_fields(result)


def result_fields(result: FioResult) -> dict[str, Any]:
    """The baseline's columns for what run_fio measured (the shape models.baselines documents)."""
    jobs = {name: asdict(job) for name, job in result.jobs.items()}
    for job in jobs.values():
        del job["name"]
    return {
        "target_mode": result.target.mode,
        "target_description": result.target.description[:1000],
        "command": result.command,
        "fio_version": result.fio_version[:100],
        "results": jobs,
        "fio_json": result.raw_json,
    }


def failure(baseline: DeviceBaseline, observer: BaselineObserver, exc: Exception) -> Ending:
    """A failed baseline's fields: fio's (or the host's) reason, and the command's output's tail."""
    fields: dict[str, Any] = {"error": str(exc)}
    if isinstance(exc, CommandFailed):
        output = tail(exc.stderr or exc.stdout, FAILED_OUTPUT_LINES) or observer.log_text()
        fields |= {"failed_command": exc.command, "failed_exit_status": exc.exit_status, "failed_output": output}
    else:
        fields["failed_output"] = observer.log_text()
    log.warning("baseline %s failed: %s", baseline.pk, exc)
    return BaselineState.FAILED, fields


@contextmanager
def baseline_heartbeat(baseline: DeviceBaseline, observer: BaselineObserver) -> Iterator[None]:
    """Stamp the baseline's heartbeat now and every heartbeat_every_s, with its progress and log."""
    running = DeviceBaseline.objects.filter(pk=baseline.pk, state=BaselineState.RUNNING)

    def stamp() -> None:
        running.update(heartbeat_at=timezone.now(), progress=observer.percent, log=observer.log_text())

    with beating(stamp, f"baseline {baseline.pk}", heartbeat_every_s()):
        yield
