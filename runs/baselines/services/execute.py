"""Execute one queued fio baseline on its host: the dispatcher (jobs.dispatch) has claimed the
host for it; this drives runs.lab.fio.run.run_fio and stores the results (BaselineExecution), and
runs.jobs.execute makes sure the baseline ends done, failed or cancelled and its host is
released whatever happens. run_fio removes what it made on the host on every path; a worker
that dies is baselines.services.sweeper's.
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from runs.baselines.services.baselines import baseline_device_refusal, baseline_settings_of
from runs.baselines.services.observer import BaselineObserver
from runs.inventory.services.connect import host_connect, host_connect_for_run
from runs.jobs.cancel_watch import CancelWatch
from runs.jobs.execute import Execution, away_ending, failure_output, job_execute
from runs.jobs.heartbeat import beating
from runs.jobs.host_reach import HostAway
from runs.jobs.kinds import BASELINE, KINDS
from runs.jobs.transitions import baseline_transition
from runs.lab.fio.run import FioCancelled, FioResult, run_fio
from runs.lab.storage.checks import DeviceIdentity
from runs.models import BaselineState, Device, DeviceBaseline
from runs.models.inventory import benchlab_data_dirs

log = logging.getLogger(__name__)
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


class BaselineExecution(Execution[DeviceBaseline]):
    """A fio baseline, done by its worker (jobs.execute does the rest): queued -> running -> done,
    its heartbeat and its end storing its progress and log, and a clock of its own (fio reports
    only at its end: the page's step and progress are told by the time)."""

    kind = KINDS[BASELINE]
    started_state = BaselineState.RUNNING
    failed_state = BaselineState.FAILED

    def __init__(self, baseline: DeviceBaseline) -> None:
        super().__init__(baseline)
        # Made here, not lazily: the heartbeat's thread and the work both read this one.
        self.observer = BaselineObserver(baseline, baseline_settings_of(baseline))

    @classmethod
    def load(cls, job_id: int) -> DeviceBaseline:
        return DeviceBaseline.objects.select_related("host", "device", "queued_by").get(pk=job_id)

    def transition(self, state: str, from_state: str | None = None, **fields: Any) -> bool:
        before = None if from_state is None else BaselineState(from_state)
        return baseline_transition(baseline=self.job, state=BaselineState(state), from_state=before, **fields)

    def refusal(self) -> str | None:
        return baseline_device_refusal(self.job.device)  # the inventory changed after it was queued

    def heartbeat_fields(self) -> dict[str, Any]:
        return {"progress": self.observer.percent, "log": self.observer.log_text()}

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        clock = beating(self.observer.tick, f"baseline {self.job.pk} clock", CLOCK_EVERY_S)
        with super().heartbeat(), clock:
            yield

    def work(self) -> Ending:
        return _measure(self.job, self.observer)

    def end(self, state: str, fields: dict[str, Any]) -> bool:
        fields = {"log": self.observer.log_text(), **fields}
        if state == BaselineState.DONE:
            fields |= {"step": "", "progress": 100.0}
        return self.transition(state, from_state=BaselineState.RUNNING, **fields)


def baseline_execute(*, baseline_id: int) -> str:
    """Measure it: the dispatcher (jobs.dispatch) has claimed its host for it
    (jobs.execute.job_execute says what it returns; baselines.services.sweeper ends a baseline
    whose worker died)."""
    return job_execute(BaselineExecution, baseline_id)


def _measure(baseline: DeviceBaseline, observer: BaselineObserver) -> Ending:
    if observer.check_cancel():  # cancelled while its worker was starting it: the host is not touched
        return BaselineState.CANCELLED, {}
    try:
        settings = baseline_settings_of(baseline)
        transport = host_connect_for_run(baseline.host)
    except HostAway as away:  # nothing started: it waits for the host (jobs.host_reach)
        return away_ending(away, BaselineState.QUEUED, BaselineState.FAILED)
    except Exception as exc:  # noqa: BLE001 - e.g. a refused host key
        return failure(baseline, observer, exc)
    watch = CancelWatch(baseline, observer.cancel_now)
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
    fields: dict[str, Any] = {"error": str(exc)} | failure_output(exc, observer.log_text())
    log.warning("baseline %s failed: %s", baseline.pk, exc)
    return BaselineState.FAILED, fields
