"""The worker's side of a running run: the lab layer's steps and progress turned into states,
samples and live events, and a cancel turned into stopping what runs on the host now."""

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from runs.bench.services.samples import client_sample_upsert, sample_upsert, warmup_sample_upsert
from runs.common.services.audit import audit_record
from runs.jobs.observer import JobObserver
from runs.jobs.transitions import run_transition
from runs.lab.benchmark.checkpoints import CheckpointEvent
from runs.lab.benchmark.drivers import DRIVERS
from runs.lab.benchmark.run import BenchmarkResult, Step
from runs.lab.benchmark.warmup import WARMUP_STREAM
from runs.lab.parse.pgbench import ProgressSample, parse_progress_line
from runs.models import AuditAction, Host, Run, RunClient, RunSample, RunState

log = logging.getLogger(__name__)
LOG_TAIL_LINES = 200
STEPS_BEFORE_RESULTS = (Step.PREPARING_STORAGE, Step.INITIALIZING_DATABASE, Step.WARMING_UP, Step.MEASURING)
STEP_STATES = {
    Step.PREPARING_STORAGE: RunState.PREPARING_STORAGE,
    Step.INITIALIZING_DATABASE: RunState.INITIALIZING_DATABASE,
    Step.WARMING_UP: RunState.WARMING_UP,
    Step.MEASURING: RunState.MEASURING,
    Step.COLLECTING: RunState.COLLECTING,
    Step.CLEANING_UP: RunState.CLEANING_UP,
}


class RunCancelled(Exception):
    pass


class RunObserver(JobObserver):
    """Turns the lab layer's steps and progress into states, samples and live events (the log's
    tail, the cancel and stopping what runs: runs.jobs.observer)."""

    def __init__(self, run: Run) -> None:
        super().__init__(run, LOG_TAIL_LINES)
        self.run = run
        self._client_ids: dict[str, int] = {}  # RunClient ids by host name, for their samples
        self.current_step: str = RunState.QUEUED  # the last step before cleaning up: where a failure happened
        self.reuse: dict[str, Any] = {}  # what the run reused and kept (bench.services.reuse)
        # Stores the results the lab layer has collected (bench.services.execute.store_when_collected).
        self.on_collected: Callable[[BenchmarkResult], None] | None = None

    @property
    def log_tail(self) -> list[str]:
        """The log's last lines (kept with the results, and a failure's output)."""
        return self.tail_lines()

    def step(self, name: str) -> None:
        if self.cancelled and name in STEPS_BEFORE_RESULTS:
            raise RunCancelled()  # noticed meanwhile (CancelWatch): the run does not even enter the step
        state = STEP_STATES[name]
        if state == RunState.MEASURING and self.run.warmup_s:
            state = RunState.WARMING_UP
        if name != Step.CLEANING_UP:
            self.current_step = state
        self.keep(f"== {state.label} ==")  # which step the lines after it belong to
        run_transition(run=self.run, state=state)
        self.check_cancel()
        # Up to the measurement a cancel stops everything; once pgbench has run (and been
        # stopped), what it measured is still collected and stored.
        if self.cancelled and name in STEPS_BEFORE_RESULTS:
            raise RunCancelled()

    def line(self, stream: str, text: str) -> None:
        program, _, host = stream.partition("@")  # "pgbench@lab2": a client host's pgbench
        shown = f"{host}: {text}" if host else text
        self.keep(shown)
        if program in DRIVERS and DRIVERS[program].progress(text) is not None:
            return  # it reaches the page as a sample event; twice would halve how long a stream lasts
        if program == WARMUP_STREAM and (sample := parse_progress_line(text)) is not None:
            self._warmup_progress(sample)  # the warm-up run's second: its own series, not the results'
            return
        self.publish("log", {"stream": program, "line": shown})

    def progress(self, sample: ProgressSample) -> None:
        second = round(sample.elapsed_s)
        warmup = second <= self.run.warmup_s
        sample_upsert(
            RunSample(
                run=self.run,
                second=second,
                tps=sample.tps,
                latency_ms=sample.latency_ms,
                latency_stddev_ms=sample.latency_stddev_ms,
                failed=sample.failed,
                lag_ms=sample.lag_ms,
                skipped=sample.skipped,
                warmup=warmup,
                qps=sample.qps,
                latency_p95_ms=sample.latency_p95_ms,
            )
        )
        event = {"second": second, "tps": sample.tps, "latency_ms": sample.latency_ms, "warmup": warmup}
        if sample.qps is not None:  # sysbench's: its latency is the second's 95th percentile, not a mean
            event |= {"qps": sample.qps, "latency_p95_ms": sample.latency_p95_ms}
        self.publish("sample", event)
        if not warmup and self.run.state == RunState.WARMING_UP:
            self.current_step = RunState.MEASURING
            run_transition(run=self.run, state=RunState.MEASURING)

    def _warmup_progress(self, sample: ProgressSample) -> None:
        second = round(sample.elapsed_s)
        assert sample.latency_ms is not None  # pgbench's progress: a warm-up run is pgbench's (spec_checks)
        warmup_sample_upsert(self.run.pk, second, sample.tps, sample.latency_ms)
        self.publish("warmup_sample", {"second": second, "tps": sample.tps, "latency_ms": sample.latency_ms})

    def client_progress(self, name: str, sample: ProgressSample) -> None:
        """A second of one client host's pgbench (progress() stores and shows their total)."""
        second = round(sample.elapsed_s)
        assert sample.latency_ms is not None  # pgbench's: only pgbench runs on several client hosts
        if not self._client_ids:
            self._client_ids = dict(RunClient.objects.filter(run=self.run).values_list("host__name", "pk"))
        client_sample_upsert(self._client_ids[name], second, sample.tps, sample.latency_ms)
        event = {"client": name, "second": second, "tps": sample.tps, "latency_ms": sample.latency_ms}
        self.publish("client_sample", event)

    def checkpoint(self, event: CheckpointEvent) -> None:
        """A checkpoint began or ended while pgbench runs (told from the log's follower thread): the
        page marks it on its charts. A reattached run tells it again; the page keeps one of each."""
        self.publish("checkpoint", dataclasses.asdict(event))

    def followed(self, offset: int) -> None:
        # Stored with the next heartbeat (jobs.heartbeat): a stamp per line would double the writes.
        self.run.progress_offset = offset

    def host_of(self, on: str | None) -> Host:
        """pgbench on the client hosts; everything else on the server."""
        return next(host for host in self.run.hosts if host.name == on) if on is not None else self.run.server_host

    def collected(self, result: BenchmarkResult) -> None:
        if self.on_collected is not None:
            self.on_collected(result)

    def formatting(self, command: str) -> None:
        self.line("storage", f"$ {command}")
        audit_record(
            action=AuditAction.DEVICE_FORMATTED,
            target=self.run.device,
            actor=self.run.queued_by,
            message=f"run {self.run.pk} on {self.run.server_host.name}: {command}",
        )
