"""Execute one queued run on the lab: claim its hosts, drive runs/lab, store what comes out.

Called by the Celery task. Cleanup on the lab host (stop PostgreSQL, unmount) is done by the
lab layer on every path; this module makes sure the run ends in done, failed or cancelled
and that its hosts are released whatever happens.
"""

import dataclasses
import logging
import socket
import statistics
from collections import deque
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from runs import live
from runs.lab.benchmark import (
    BenchmarkResult,
    BenchmarkSpec,
    ClientSpec,
    Endpoint,
    Step,
    remove_run_dir,
    run_benchmark,
)
from runs.lab.errors import CommandFailed, LabError, tail
from runs.lab.parse_pgbench import ProgressSample, parse_progress_line
from runs.lab.pgbench import Detached, InitOptions, RunOptions, cancel
from runs.lab.postgres import parse_settings
from runs.lab.probe import probe_host
from runs.lab.storage import DeviceIdentity, FilesystemSpec, parse_mkfs_options, parse_mount_options
from runs.lab.transport import Transport
from runs.models import (
    FINAL_STATES,
    AuditAction,
    Host,
    OsSource,
    PgInstall,
    Run,
    RunArtifact,
    RunSample,
    RunState,
    Workload,
)
from runs.models.inventory import benchlab_data_dirs
from runs.services.adaptive import campaign_advance
from runs.services.audit import audit_record
from runs.services.heartbeat import run_has_live_worker, run_heartbeat
from runs.services.lab_access import host_connect
from runs.services.os_series import os_series_store
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


def client_pgbench_install(server_install: PgInstall, client: Host) -> PgInstall | None:
    """The client's PostgreSQL install whose pgbench drives the run: the server's major
    version when the client has it (same protocol features and output), else its newest."""
    installs = sorted(client.pg_installs.all(), key=lambda pg: _version_key(pg.version))
    major = server_install.version.split(".")[0]
    same_major = [pg for pg in installs if pg.version.split(".")[0] == major]
    candidates = same_major or installs
    return candidates[-1] if candidates else None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def client_spec(run: Run) -> ClientSpec | None:
    client = run.client_host
    if client is None:
        return None
    install = client_pgbench_install(run.pg_install, client)
    if install is None:
        raise ValueError(f"{client} has no PostgreSQL install with pgbench in the inventory")
    return ClientSpec(pg_bin_dir=install.bin_dir, address=client.address, server_address=run.server_host.address)


def benchmark_spec(run: Run) -> BenchmarkSpec:
    """The lab layer's view of a run (the lab layer never reads the database)."""
    device = run.device
    custom = run.workload == Workload.CUSTOM
    return BenchmarkSpec(
        device=DeviceIdentity(
            path=device.path,
            wipe_allowed=device.wipe_allowed,
            serial=device.serial,
            size_bytes=device.capacity_bytes,
            protected_dirs=benchlab_data_dirs(),
        ),
        filesystem=FilesystemSpec(
            fstype=run.filesystem,
            mkfs_options=parse_mkfs_options(run.filesystem, run.mkfs_options) if run.mkfs_options else (),
            mount_options=parse_mount_options(run.filesystem, run.mount_options),
        ),
        pg_bin_dir=run.pg_install.bin_dir,
        pg_settings=parse_settings(run.pg_settings),
        init=InitOptions(scale=run.scale),
        run=RunOptions(
            builtin=None if custom else run.workload,
            custom_script=run.custom_script if custom else None,
            clients=run.clients,
            threads=run.threads,
            duration_s=run.warmup_s + run.duration_s,  # one pgbench run; the warm-up is cut off afterwards
            query_mode=run.query_mode,
            rate_tps=run.rate_limit_tps,
            log_sampling_rate=run.log_sampling_rate,
        ),
        run_key=f"run-{run.pk}-{run.key.hex[:12]}",
        client=client_spec(run),
        warmup_s=run.warmup_s,
    )


class RunObserver:
    """Turns the lab layer's steps and progress into states, samples and live events."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.log_tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.process: Detached | None = None
        self.cancelled = False
        self.cancel_sent = False
        self.current_step: str = RunState.QUEUED  # the last step before cleaning up: where a failure happened
        self.reuse: dict[str, Any] = {}  # what the run reused and kept (services.reuse)

    def _check_cancel(self) -> None:
        # A run already finished was cancelled while its worker was claiming its hosts.
        requested, state = Run.objects.values_list("cancel_requested", "state").get(pk=self.run.pk)
        if requested or state in FINAL_STATES:
            self.cancelled = True

    def step(self, name: str) -> None:
        state = STEP_STATES[name]
        if state == RunState.MEASURING and self.run.warmup_s:
            state = RunState.WARMING_UP
        if name != Step.CLEANING_UP:
            self.current_step = state
        run_transition(run=self.run, state=state)
        self._check_cancel()
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
        self._check_cancel()
        if self.cancelled and self.process is not None and not self.cancel_sent:
            self.cancel_sent = True
            connection = host_connect(self.run.client_host or self.run.server_host)  # where pgbench runs
            try:
                cancel(connection, self.process)
            finally:
                connection.close()

    def started(self, process: Detached) -> None:
        self.process = process

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
    run_transition(run=run, state=state, **fields)
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
    if started.update(started_at=run.started_at, worker=run.worker):
        return True
    run.refresh_from_db(fields=["state", "started_at", "worker"])
    return False


def _execute_claimed(run: Run) -> Ending:
    observer = RunObserver(run)
    try:
        spec = benchmark_spec(run)
        transport, client = connect_hosts(run)
    except Exception as exc:  # noqa: BLE001 - e.g. no route, a refused host key, an undecryptable key
        return failure(observer, exc)
    try:
        facts = probe_host(transport).as_json()
        client_facts = probe_host(client.transport).as_json() if client else None
        result = _run_with_reuse(run, transport, spec, observer, client)
    except RunCancelled:
        return RunState.CANCELLED, {}
    except Exception as exc:  # noqa: BLE001 - every failure ends the run as failed, with its reason
        return (RunState.CANCELLED, {}) if observer.cancelled else failure(observer, exc)
    finally:
        close_hosts(run, spec, transport, client)
    store_results(run, result, facts, client_facts, observer)
    return result_ending(result, observer)


def connect_hosts(run: Run) -> tuple[Transport, Endpoint | None]:
    """Connections to the run's server and, if it has one, its client host (with a way to
    reconnect to it)."""
    transport = host_connect(run.server_host)
    if run.client_host is None:
        return transport, None
    client_host = run.client_host
    try:
        return transport, Endpoint(host_connect(client_host), lambda: host_connect(client_host))
    except BaseException:
        transport.close()
        raise


def close_hosts(run: Run, spec: BenchmarkSpec, transport: Transport, client: Endpoint | None) -> None:
    """Remove the run's directory on each host (its record and outputs are stored by now) and disconnect."""
    for connection in [transport, *([client.transport] if client else [])]:
        try:
            remove_run_dir(connection, spec.run_key)
        except LabError:
            log.warning("could not remove the run directory of run %s on %s", run.pk, connection.label)
        connection.close()


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
    fields: dict[str, Any] = {"failed_step": observer.current_step, "error": str(exc)}
    if isinstance(exc, CommandFailed):
        fields |= {
            "failed_command": exc.command,
            "failed_exit_status": exc.exit_status,
            "failed_output": tail(exc.stderr or exc.stdout) or "\n".join(observer.log_tail),
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
    run.steady_tps_mean, run.steady_tps_stddev = _steady_state(run)
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
    run.save(update_fields=[*RESULT_FIELDS])
    artifacts = {
        "pgbench.stdout.txt": result.stdout,
        "pgbench.stderr.txt": result.stderr,
        "pgbench-init.txt": result.init_output,
        "iostat.txt": result.os.iostat_text,
        "vmstat.txt": result.os.vmstat_text,
    }
    for name, content in artifacts.items():
        RunArtifact.objects.update_or_create(run=run, name=name, defaults={"content": content})
    live.publish(run.pk, "log", {"line": f"results stored ({len(observer.log_tail)} log lines kept)"})
