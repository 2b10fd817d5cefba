"""Execute one queued run on the lab: claim its hosts, drive runs/lab, store what comes out.

Called by the Celery task. Cleanup on the lab host (stop PostgreSQL, unmount) is done by the
lab layer on every path; this module makes sure the run ends in done, failed or cancelled
and that its hosts are released whatever happens.
"""

import dataclasses
import logging
import socket
import statistics
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from runs import live
from runs.lab.benchmark import (
    BenchmarkResult,
    BenchmarkSpec,
    Endpoint,
    Step,
    remove_run_dir,
    run_benchmark,
)
from runs.lab.errors import CommandFailed, LabError, StorageFailed, tail
from runs.lab.parse_pgbench import ProgressSample, parse_progress_line
from runs.lab.pgbench import Detached, cancel
from runs.lab.probe import probe_host
from runs.lab.reconnect import ReconnectingTransport
from runs.lab.transport import Transport
from runs.models import (
    AuditAction,
    OsSource,
    Run,
    RunArtifact,
    RunSample,
    RunState,
)
from runs.services.adaptive import campaign_advance
from runs.services.audit import audit_record
from runs.services.cancel_watch import CancelWatch, cancel_requested
from runs.services.db_retry import with_database_retry
from runs.services.heartbeat import run_has_live_worker, run_heartbeat
from runs.services.lab_access import host_connect, host_connect_for_run
from runs.services.lab_specs import benchmark_spec
from runs.services.os_series import os_series_store
from runs.services.pending_cleanup import mark_cleanup_pending, pending_note
from runs.services.queue import queue_dispatch, run_holds_its_hosts, run_release_hosts
from runs.services.reuse import discard_setups, record_kept, reuse_plan
from runs.services.runs import run_transition
from runs.services.samples import sample_upsert

log = logging.getLogger(__name__)
LOG_TAIL_LINES = 200
RESULT_FIELDS = (
    "summary",
    "tps",
    "latency_avg_ms",
    "latency_stddev_ms",
    "failed_transactions",
    "skipped_transactions",
    "steady_tps_mean",
    "steady_tps_stddev",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "metrics",
    "device_util_pct",
    "cache_hit_pct",
    "os_means",
    "environment",
)
STEPS_BEFORE_RESULTS = (Step.PREPARING_STORAGE, Step.INITIALIZING_DATABASE, Step.MEASURING)
STEP_STATES = {
    Step.PREPARING_STORAGE: RunState.PREPARING_STORAGE,
    Step.INITIALIZING_DATABASE: RunState.INITIALIZING_DATABASE,
    Step.MEASURING: RunState.MEASURING,
    Step.COLLECTING: RunState.COLLECTING,
    Step.CLEANING_UP: RunState.CLEANING_UP,
}


class RunCancelled(Exception):
    pass


class RunObserver:
    """Turns the lab layer's steps and progress into states, samples and live events."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.log_tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.process: Detached | None = None  # the detached command running now: what a cancel stops
        self.cancelled = False
        self.cancel_sent = False
        self._cancel_lock = threading.Lock()  # CancelWatch's thread and this one both stop the process
        self.current_step: str = RunState.QUEUED  # the last step before cleaning up: where a failure happened
        self.reuse: dict[str, Any] = {}  # what the run reused and kept (services.reuse)

    def check_cancel(self) -> bool:
        """Has a cancel been asked for (or the run ended from outside while its worker was
        starting it)? A read, retried through a restart of benchlab's database like the writes."""
        if not self.cancelled:
            self.cancelled = with_database_retry(
                lambda: cancel_requested(self.run.pk), f"run {self.run.pk}: cancelled?"
            )
        return self.cancelled

    def step(self, name: str) -> None:
        if self.cancelled and name in STEPS_BEFORE_RESULTS:
            raise RunCancelled()  # noticed meanwhile (CancelWatch): the run does not even enter the step
        state = STEP_STATES[name]
        if state == RunState.MEASURING and self.run.warmup_s:
            state = RunState.WARMING_UP
        if name != Step.CLEANING_UP:
            self.current_step = state
        run_transition(run=self.run, state=state)
        self.check_cancel()
        # Up to the measurement a cancel stops everything; once pgbench has run (and been
        # stopped), what it measured is still collected and stored.
        if self.cancelled and name in STEPS_BEFORE_RESULTS:
            raise RunCancelled()

    def line(self, stream: str, text: str) -> None:
        self.log_tail.append(text)
        if stream == "pgbench" and parse_progress_line(text) is not None:
            return  # it reaches the page as a sample event; twice would halve how long a stream lasts
        live.publish(self.run.pk, "log", {"stream": stream, "line": text})

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
            )
        )
        live.publish(
            self.run.pk,
            "sample",
            {"second": second, "tps": sample.tps, "latency_ms": sample.latency_ms, "warmup": warmup},
        )
        if not warmup and self.run.state == RunState.WARMING_UP:
            self.current_step = RunState.MEASURING
            run_transition(run=self.run, state=RunState.MEASURING)

    def started(self, process: Detached) -> None:
        self.process = process
        if self.cancelled:  # the cancel came while it was being started
            self._stop_process()

    def followed(self, offset: int) -> None:
        # Stored with the next heartbeat (services.heartbeat): a stamp per line would double the writes.
        self.run.progress_offset = offset

    def cancel_now(self) -> None:
        """A cancel was asked for (called by CancelWatch, from its thread): stop the detached
        command that runs now, if any; the steps stop at their next check (step())."""
        self.cancelled = True
        live.publish(self.run.pk, "log", {"line": "stopping: the run was cancelled"})
        self._stop_process()

    def _stop_process(self) -> None:
        with self._cancel_lock:
            if self.process is None or self.cancel_sent:
                return
            self.cancel_sent, process = True, self.process
        # pgbench runs on the client host when there is one; everything else on the server.
        client = self.run.client_host
        connection = host_connect(client if client and process.name == "pgbench" else self.run.server_host)
        try:
            cancel(connection, process)
        finally:
            connection.close()

    def formatting(self, command: str) -> None:
        audit_record(
            action=AuditAction.DEVICE_FORMATTED,
            target=self.run.device,
            actor=self.run.queued_by,
            message=f"run {self.run.pk} on {self.run.server_host.name}: {command}",
        )


Ending = tuple[RunState, dict[str, Any]]  # the final state and the fields that go with it


def run_execute(*, run_id: int) -> str:
    """Run it: the dispatcher (services.queue) has claimed its hosts for it. Returns "waiting"
    (it does not hold its hosts: the dispatcher sends it again when its turn comes), "running"
    (another worker is running it: look again later), "abandoned" (the worker that started it
    died: services.sweeper ends it), or the state it ended in."""
    run = Run.objects.select_related("server_host", "client_host", "device", "pg_install", "queued_by").get(pk=run_id)
    if run.is_finished:
        return run.state
    if run.state != RunState.QUEUED or run.started_at is not None:
        # The broker handed the task out again. A worker still stamping the heartbeat is
        # running it; otherwise that worker died, and the lab host may still hold the run's
        # mount: say so instead of starting over on top of it.
        return "running" if run_has_live_worker(run) else "abandoned"  # services.sweeper ends it
    if not run_holds_its_hosts(run):
        return "waiting"
    # Not a wait (a disabled host is one): runs on benchlab's own server were forbidden after
    # this run was queued.
    forbidden = [refusal for host in run.hosts if (refusal := host.own_server_refusal())]
    if forbidden:
        run_release_hosts(run=run)
        run_transition(run=run, state=RunState.FAILED, error=forbidden[0])
        run_after_end(run)
        return run.state
    if not _mark_started(run):
        return run.state  # cancelled while queued; the cancel gave its hosts to the next in line
    return drive_to_end(run, _execute_claimed)


def drive_to_end(run: Run, work: Callable[[Run], Ending]) -> str:
    """Do the run's work with its heartbeat beating, then end it whatever happened: hosts
    released first (once a run shows as finished, its hosts are free for the next one), its
    final state, then what follows a run's end. Returns that state."""
    try:
        with run_heartbeat(run):
            state, fields = work(run)
    except Exception as exc:
        log.exception("run %s: benchlab failed", run.pk)
        state, fields = RunState.FAILED, {"error": f"benchlab failed: {exc!r}"}
    finally:
        run_release_hosts(run=run)
    if not run_transition(run=run, state=state, **fields):
        run.refresh_from_db(fields=["state"])  # ended meanwhile from outside: cancelled while starting
    run_after_end(run)
    return run.state


def run_after_end(run: Run) -> None:
    """The run has ended: an adaptive campaign may want another round; then the next in line starts."""
    if run.campaign_id is not None:
        campaign_advance(campaign_id=run.campaign_id)
    queue_dispatch()


def _mark_started(run: Run) -> bool:
    """Stamp the start unless the run was cancelled meanwhile. From here on a cancel no longer
    releases the run's hosts (run_cancel): this worker does, when the run has stopped."""
    run.started_at, run.worker = timezone.now(), socket.gethostname()
    started = Run.objects.filter(pk=run.pk, state=RunState.QUEUED, started_at__isnull=True)

    def stamp() -> bool:  # safe to repeat: a stamp whose commit's answer was lost is found as ours
        mine = Run.objects.filter(pk=run.pk, started_at=run.started_at, worker=run.worker)
        return bool(started.update(started_at=run.started_at, worker=run.worker)) or mine.exists()

    if with_database_retry(stamp, f"run {run.pk}: stamping its start"):
        return True
    run.refresh_from_db(fields=["state", "started_at", "worker"])
    return False


def _execute_claimed(run: Run) -> Ending:
    observer = RunObserver(run)
    if observer.check_cancel():  # cancelled while its worker was starting it: no host is touched
        return RunState.CANCELLED, {}
    with CancelWatch(run.pk, observer.cancel_now):
        return _execute_watched(run, observer)


def _execute_watched(run: Run, observer: RunObserver) -> Ending:
    try:
        spec = benchmark_spec(run)
        transport, client = connect_hosts(run)
    except Exception as exc:  # noqa: BLE001 - e.g. no route, a refused host key, an undecryptable key
        return failure(observer, exc)
    ending: Ending | None = None
    try:
        facts = probe_host(transport).as_json()
        client_facts = probe_host(client.transport).as_json() if client else None
        result = _run_with_reuse(run, transport, spec, observer, client)
    except RunCancelled:
        ending = RunState.CANCELLED, {}
    except Exception as exc:  # noqa: BLE001 - every failure ends the run as failed, with its reason
        ending = (RunState.CANCELLED, {}) if observer.cancelled else failure(observer, exc)
    finally:
        pending = close_hosts(run, spec, transport, client)
    if ending is None:
        store_results(run, result, facts, client_facts, observer)
        ending = result_ending(result, observer)
    return with_pending_cleanup(ending, pending)


def connect_hosts(run: Run) -> tuple[ReconnectingTransport, Endpoint | None]:
    """Connections to the run's server and, if it has one, its client host, each opened again
    when it is lost (with a way to open another one to the client, for following pgbench)."""
    transport = host_connect_for_run(run.server_host)
    if run.client_host is None:
        return transport, None
    client_host = run.client_host
    try:
        return transport, Endpoint(host_connect_for_run(client_host), lambda: host_connect(client_host))
    except BaseException:
        transport.close()
        raise


def close_hosts(run: Run, spec: BenchmarkSpec, transport: Transport, client: Endpoint | None) -> str:
    """Remove the run's directory on each host (its record and outputs are stored by now) and
    disconnect. A host that stayed unreachable keeps what the run left until it answers again
    (services.pending_cleanup): returns a note saying so, or ""."""
    connections = [(run.server_host, transport)]
    if client is not None and run.client_host is not None:
        connections.append((run.client_host, client.transport))
    unreachable = [host for host, connection in connections if getattr(connection, "gave_up", None)]
    for host, connection in connections:
        try:
            if host not in unreachable:
                remove_run_dir(connection, spec.run_key)
        except LabError:
            log.warning("could not remove the run directory of run %s on %s", run.pk, connection.label)
        connection.close()
    return pending_note(mark_cleanup_pending(run, unreachable))


def with_pending_cleanup(ending: Ending, note: str) -> Ending:
    """The run's error also says which hosts are still to be cleaned up (a run whose host went
    away for good in its own cleanup fails: its host is not ready for the next run)."""
    state, fields = ending
    if not note:
        return ending
    if state == RunState.DONE:
        state, fields = RunState.FAILED, fields | {"failed_step": RunState.CLEANING_UP}
    return state, fields | {"error": "; ".join(filter(None, [fields.get("error", ""), note]))}


def result_ending(result: BenchmarkResult, observer: RunObserver) -> Ending:
    """How a run whose results are stored ends: cancelled, failed with pgbench's reason, or done."""
    if observer.cancelled:
        return RunState.CANCELLED, {}
    if result.exit_status != 0:
        return RunState.FAILED, {
            "failed_step": RunState.MEASURING,
            "failed_command": result.command,
            "failed_exit_status": result.exit_status,
            "failed_output": tail(result.stderr),
            "error": "pgbench failed",
        }
    return RunState.DONE, {}


def _run_with_reuse(
    run: Run, transport: Transport, spec: BenchmarkSpec, observer: RunObserver, client: Endpoint | None
) -> BenchmarkResult:
    """The benchmark, starting from a setup an earlier run of the campaign kept when there is
    one, and keeping this one's for the next run when it shares it (services.reuse)."""
    plan = reuse_plan(run)
    discard_setups(transport, plan.discard)
    kept = None
    try:
        result = run_benchmark(
            transport,
            lambda: host_connect(run.server_host),
            spec,
            observer,
            client=client,
            reuse=plan.reuse,
            keep=plan.keep,
        )
        kept = result.kept
        observer.reuse = {"reused_from_run": plan.reused_from if result.reused else None,
                          "reuse_refused": result.reuse_refused, "kept_for_next_run": kept is not None}  # fmt: skip
        return result
    finally:
        if plan.reuse is not None or plan.keep:
            record_kept(run, kept)  # the lab layer has taken over (or cleaned up) the reused setup


def failure(observer: RunObserver, exc: Exception) -> Ending:

    # A failed device is named as the inventory names it ("host:device"), not by its path.
    error = exc.describe(str(observer.run.device)) if isinstance(exc, StorageFailed) else str(exc)
    fields: dict[str, Any] = {"failed_step": observer.current_step, "error": error}
    if isinstance(exc, CommandFailed):
        fields |= {
            "failed_command": exc.command,
            "failed_exit_status": exc.exit_status,
            "failed_output": tail(exc.stderr or exc.stdout) or "\n".join(observer.log_tail),
        }
    elif isinstance(exc, StorageFailed) and exc.command:  # the command the failed storage broke
        fields |= {
            "failed_command": exc.command,
            "failed_exit_status": exc.exit_status,
            "failed_output": tail(exc.output) or "\n".join(list(observer.log_tail)[-40:]),
        }
    else:
        fields["failed_output"] = "\n".join(list(observer.log_tail)[-40:])
    log.warning("run %s failed in %s: %s", observer.run.pk, observer.current_step, exc)
    return RunState.FAILED, fields


def _steady_state(run: Run) -> tuple[float | None, float | None]:
    values = list(RunSample.objects.filter(run=run, warmup=False).values_list("tps", flat=True))
    mean = statistics.fmean(values) if values else None
    sd = statistics.stdev(values) if len(values) > 1 else None
    return mean, sd


def store_results(
    run: Run,
    result: BenchmarkResult,
    host_facts: dict[str, Any],
    client_facts: dict[str, Any] | None,
    observer: RunObserver,
) -> None:
    summary = result.summary
    run.summary = dataclasses.asdict(summary) if summary else {}
    run.tps = summary.tps if summary else None
    run.latency_avg_ms = summary.latency_avg_ms if summary else None
    run.latency_stddev_ms = summary.latency_stddev_ms if summary else None
    run.failed_transactions = summary.failed if summary else None
    run.skipped_transactions = summary.skipped if summary else None
    # Every read and write here is retried through a restart of benchlab's database (pgbench has
    # finished, its outputs are in hand: waiting loses nothing). All are safe to repeat: reads,
    # the series replaced in one transaction (os_series_store), the run's result fields saved
    # again, an artifact per name created or updated.
    steady = with_database_retry(lambda: _steady_state(run), f"run {run.pk}: reading its samples")
    run.steady_tps_mean, run.steady_tps_stddev = steady
    latency = result.latency
    run.latency_p50_ms = latency.p50_ms if latency else None
    run.latency_p95_ms = latency.p95_ms if latency else None
    run.latency_p99_ms = latency.p99_ms if latency else None
    run.os_means = os_series_store(run, result.os)
    run.device_util_pct = run.os_means[OsSource.IOSTAT.value]["util_pct"]
    stats = result.pg_stats
    cache_hit_ratio = stats.cache_hit_ratio if stats else None
    run.cache_hit_pct = cache_hit_ratio * 100 if cache_hit_ratio is not None else None
    run.metrics = {
        "pg_stats": dataclasses.asdict(stats) if stats else {},
        "cache_hit_ratio": cache_hit_ratio,
        "checkpoints": stats.checkpoints if stats else None,
        "buffers_written": stats.buffers_written if stats else None,
        "aggregate": [dataclasses.asdict(i) for i in result.aggregate],
        "latency": dataclasses.asdict(latency) if latency else None,
    }
    pg = run.pg_install
    run.environment = {
        "host": {"name": run.server_host.name, "address": run.server_host.address, **host_facts},
        "device": {
            "name": run.device.name,
            "kind": run.device.kind,
            "path": run.device.path,
            "node": result.storage.device_node,
            "model": run.device.model,
            "serial": run.device.serial,
            "capacity_bytes": run.device.capacity_bytes,
        },
        "filesystem": {
            "type": run.filesystem,
            "mkfs_command": result.storage.mkfs_command,
            "mount_options_requested": run.mount_options,
            "mount_options": result.storage.mount_options,
        },
        "postgresql": {
            "version": result.pg_version,
            "bin_dir": pg.bin_dir,
            "block_size": pg.block_size,
            "wal_block_size": pg.wal_block_size,
            "non_default_settings": result.pg_non_default_settings,
        },
        "pgbench": {
            "version": result.pgbench_version,
            "host": run.client_host.name if run.client_host else run.server_host.name,
            "command": result.command,
        },
        "client": (
            {"name": run.client_host.name, "address": run.client_host.address, **client_facts}
            if run.client_host and client_facts is not None
            else None
        ),
        "init_command": result.init_command,
        "reuse": observer.reuse,
    }
    # Only the result fields: state and cancel_requested belong to other writers.
    with_database_retry(lambda: run.save(update_fields=[*RESULT_FIELDS]), f"run {run.pk}: storing its results")
    artifacts = {
        "pgbench.stdout.txt": result.stdout,
        "pgbench.stderr.txt": result.stderr,
        "pgbench-init.txt": result.init_output,
        "iostat.txt": result.os.iostat_text,
        "vmstat.txt": result.os.vmstat_text,
    }

    def store_artifacts() -> None:
        for name, content in artifacts.items():
            RunArtifact.objects.update_or_create(run=run, name=name, defaults={"content": content})

    with_database_retry(store_artifacts, f"run {run.pk}: storing its raw outputs")
    live.publish(run.pk, "log", {"line": f"results stored ({len(observer.log_tail)} log lines kept)"})
