"""A finished measurement stored: its summary, steady state, percentiles, OS series and
metrics, the environment it ran in, and its raw outputs."""

import dataclasses
import statistics
from functools import partial
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from runs.bench.services.drift_facts import with_drift_facts
from runs.bench.services.observer import RunObserver
from runs.bench.services.os_series import os_series_store
from runs.bench.sysbench_metrics import sysbench_metrics
from runs.common.db_retry import with_database_retry
from runs.inventory.services.device_health import health_reading_store
from runs.jobs import live
from runs.lab.benchmark.run import BenchmarkResult
from runs.method.selectors import method_columns
from runs.models import DataState, HealthSource, OsSource, Run, RunArtifact, RunClient, RunClientSample, RunSample

# What a run keeps of each client host: what its pgbench ran on, and what drift follows (not its disks).
CLIENT_FACTS = ("hostname", "kernel", "distribution", "cpu_model", "cpu_cores", "memory_bytes")
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
    "start_skew_ms",
    "memory_tier",
    "durable",
    "steady",
)


def _steady_state(run: Run) -> tuple[float | None, float | None]:
    values = list(RunSample.objects.filter(run=run, warmup=False).values_list("tps", flat=True))
    mean = statistics.fmean(values) if values else None
    sd = statistics.stdev(values) if len(values) > 1 else None
    return mean, sd


def store_results(
    run: Run,
    result: BenchmarkResult,
    host_facts: dict[str, Any],
    clients_facts: list[dict[str, Any]],
    observer: RunObserver,
    drift: dict[str, Any] | None = None,
) -> None:
    """A finished measurement's figures, the setup it ran on and its raw outputs, on the run.

    Every read and write here is retried through a restart of benchlab's database (pgbench has
    finished, its outputs are in hand: waiting loses nothing). All are safe to repeat: reads,
    the series replaced in one transaction (os_series_store), the run's result fields saved
    again, an artifact per name created or updated."""
    _set_pgbench_figures(run, result)
    _set_os_and_postgres_figures(run, result)
    run.environment = with_drift_facts(_environment(run, result, host_facts, clients_facts, observer), drift)
    checkpoints = result.checkpoints.as_json() if result.checkpoints else None
    run.environment.setdefault("method", {})["checkpoints"] = checkpoints  # issue 32's facts: its own key
    for name, value in method_columns(run).items():
        setattr(run, name, value)
    # Only the result fields: state and cancel_requested belong to other writers.
    with_database_retry(lambda: run.save(update_fields=[*RESULT_FIELDS]), f"run {run.pk}: storing its results")
    with_database_retry(lambda: store_client_results(run, result), f"run {run.pk}: storing its clients' results")
    _store_artifacts(run, _artifacts(result, run.driver))
    if result.device_health is not None:
        health = result.device_health
        store = partial(health_reading_store, device=run.device, health=health, source=HealthSource.RUN, run=run)
        with_database_retry(store, f"run {run.pk}: storing its device's health")
    live.publish(run.pk, "log", {"line": f"results stored ({len(observer.log_tail)} log lines kept)"})


@dataclasses.dataclass(frozen=True)
class RunFacts:
    """What the worker learned before the measurement, stored with its results."""

    host: dict[str, Any]  # the server's probe
    clients: list[dict[str, Any]]  # each client host's probe
    drift: dict[str, Any] | None  # bench.services.drift_facts
    reused_from: int | None = None  # the run whose kept setup this one was given


def reuse_said(reused_from: int | None, result: BenchmarkResult) -> dict[str, Any]:
    """What the run reused and kept, as its environment records it."""
    return {
        "reused_from_run": reused_from if result.reused else None,
        "reuse_refused": result.reuse_refused,
        "kept_for_next_run": result.kept is not None,
    }


def mark_results_stored(run: Run, failure: dict[str, Any]) -> None:
    """The run's results are stored, and how they end it (`failure`: the fields of a pgbench
    that failed; none: done). A worker that dies from here on loses no measurement:
    bench.services.sweeper cleans up and ends the run from what is stored (stored_ending)."""
    run.results_stored_at = timezone.now()
    fields = {"results_stored_at": run.results_stored_at, **failure}
    rows = Run.objects.filter(pk=run.pk)
    with_database_retry(lambda: rows.update(**fields), f"run {run.pk}: marking its results stored")


def store_stage_times(run: Run, result: BenchmarkResult) -> None:
    """The seconds each stage took, the cleanup's too: it ran after the results were stored."""
    run.environment["stages"] = _stage_times(result)
    save = partial(run.save, update_fields=["environment"])
    with_database_retry(save, f"run {run.pk}: storing its stages' times")


def _stage_times(result: BenchmarkResult) -> dict[str, float]:
    return {name: round(seconds, 3) for name, seconds in result.stages.items()}


def stored_failure(run: Run) -> dict[str, Any]:
    """The failure mark_results_stored recorded with the results ({}: they end the run done)."""
    if not run.failed_step:
        return {}
    names = ("failed_step", "failed_command", "failed_exit_status", "failed_output", "error")
    return {name: getattr(run, name) for name in names}


def _set_pgbench_figures(run: Run, result: BenchmarkResult) -> None:
    """pgbench's summary, the steady state of the per-second samples, the latency percentiles."""
    summary = result.summary
    run.summary = dataclasses.asdict(summary) if summary else {}
    run.tps = summary.tps if summary else None
    run.latency_avg_ms = summary.latency_avg_ms if summary else None
    run.latency_stddev_ms = summary.latency_stddev_ms if summary else None
    run.failed_transactions = summary.failed if summary else None
    run.skipped_transactions = summary.skipped if summary else None
    steady = with_database_retry(lambda: _steady_state(run), f"run {run.pk}: reading its samples")
    run.steady_tps_mean, run.steady_tps_stddev = steady
    if result.sysbench is not None:  # sysbench's figures where pgbench's summary would be
        report = result.sysbench.summary
        run.tps = report.tps if report else None
        run.latency_avg_ms = report.latency_avg_ms if report else None
        run.failed_transactions = report.errors if report else None
    latency = result.latency
    run.latency_p50_ms = latency.p50_ms if latency else None
    run.latency_p95_ms = latency.p95_ms if latency else None
    run.latency_p99_ms = latency.p99_ms if latency else None
    run.start_skew_ms = result.start_skew_ms


def _set_os_and_postgres_figures(run: Run, result: BenchmarkResult) -> None:
    """iostat's and vmstat's series and means, PostgreSQL's statistics, the aggregate log."""
    run.os_means = os_series_store(run, result.os)
    run.device_util_pct = run.os_means[OsSource.IOSTAT.value]["util_pct"]
    stats, latency = result.pg_stats, result.latency
    cache_hit_ratio = stats.cache_hit_ratio if stats else None
    run.cache_hit_pct = cache_hit_ratio * 100 if cache_hit_ratio is not None else None
    run.metrics = {
        "pg_stats": dataclasses.asdict(stats) if stats else {},
        "cache_hit_ratio": cache_hit_ratio,
        "checkpoints": stats.checkpoints if stats else None,
        "buffers_written": stats.buffers_written if stats else None,
        "aggregate": [dataclasses.asdict(i) for i in result.aggregate],
        "latency": dataclasses.asdict(latency) if latency else None,
        "latency_seconds": [dataclasses.asdict(second) for second in result.latency_seconds],
    }
    if result.sysbench is not None:
        run.metrics["sysbench"] = sysbench_metrics(result.sysbench)


def _environment(
    run: Run,
    result: BenchmarkResult,
    host_facts: dict[str, Any],
    clients_facts: list[dict[str, Any]],
    observer: RunObserver,
) -> dict[str, Any]:
    """What the run ran on and with, as the hosts and the server said: what a comparison and
    the drift check read."""
    clients = run.client_host_list
    clients_environment = [
        {"name": host.name, "address": host.address, **{k: v for k, v in facts.items() if k in CLIENT_FACTS}}
        for host, facts in zip(clients, clients_facts, strict=False)
    ]
    pg = run.pg_install
    return {
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
            # As the running server said; the inventory's only for a run that stopped before that.
            "block_size": result.pg_block_size or pg.block_size,
            "wal_block_size": result.pg_wal_block_size or pg.wal_block_size,
            "page_sizes_from": "server" if result.pg_block_size else "inventory",
            "non_default_settings": result.pg_non_default_settings,
        },
        "pgbench": {
            "version": result.pgbench_version,
            "host": ", ".join(host.name for host in clients) or run.server_host.name,
            "command": result.command,
            "started_epoch": result.pgbench_started_epoch,  # when its first progress second began
        },
        "client": clients_environment[0] if clients_environment else None,  # the first: compared as before
        "clients": clients_environment,
        "start_skew_ms": result.start_skew_ms,
        # The separate warm-up run before the measurement (its seconds: RunWarmupSample), never in the results.
        "warmup_run": dataclasses.asdict(result.warmup_run) if result.warmup_run else None,
        "init_command": result.init_command,
        "reuse": observer.reuse,
        "stages": _stage_times(result),
        # Issue 32's facts: memory tier, durability, the host as it was (runs.lab.benchmark.method_readings),
        # the seed and the state before measuring; the checkpoints are added with the results.
        "method": result.method.as_environment()
        | {"random_seed": run.random_seed, "state": _state_before(run, result)},
    }


def _state_before(run: Run, result: BenchmarkResult) -> dict[str, Any]:
    """What the run did before measuring, as the lab did it; as declared, for a run reattached
    after its worker died (the lab's record of it went with the worker: settle_s unknown)."""
    if result.state_before:
        return result.state_before
    data = "reused" if result.reused else ("fresh" if run.data_state == DataState.REUSED else run.data_state)
    return {"cache": run.cache_state, "data": data, "checkpoint_before": run.checkpoint_before, "settle_s": None}


def _artifacts(result: BenchmarkResult, driver: str) -> dict[str, str]:
    """The raw outputs kept with the run, by name (the driver's: pgbench.stdout.txt,
    sysbench.stdout.txt, ...): with several client hosts, each one's own."""
    artifacts = {
        f"{driver}-init.txt": result.init_output,
        "iostat.txt": result.os.iostat_text,
        "vmstat.txt": result.os.vmstat_text,
    }
    if len(result.clients) > 1:
        for client in result.clients:
            artifacts |= {
                f"pgbench.{client.name}.stdout.txt": client.stdout,
                f"pgbench.{client.name}.stderr.txt": client.stderr,
            }
    else:
        artifacts |= {f"{driver}.stdout.txt": result.stdout, f"{driver}.stderr.txt": result.stderr}
    return artifacts


def _store_artifacts(run: Run, artifacts: dict[str, str]) -> None:
    def store() -> None:
        for name, content in artifacts.items():
            RunArtifact.objects.update_or_create(run=run, name=name, defaults={"content": content})

    with_database_retry(store, f"run {run.pk}: storing its raw outputs")


def _steady_tps(run: Run, row: RunClient, one_client: bool) -> "QuerySet[Any, float]":
    """A client host's seconds after the warm-up. One client host's seconds are the run's own:
    they are stored as the run's samples only."""
    if one_client:
        return RunSample.objects.filter(run=run, second__gt=run.warmup_s).values_list("tps", flat=True)
    return RunClientSample.objects.filter(run_client=row, second__gt=run.warmup_s).values_list("tps", flat=True)


def store_client_results(run: Run, result: BenchmarkResult) -> None:
    """Each client host's share: its command, start, round trip, figures and steady state."""
    rows = {row.host.name: row for row in RunClient.objects.filter(run=run).select_related("host")}
    for client in result.clients:
        row = rows.get(client.name)
        if row is None:
            continue
        summary, latency = client.summary, client.latency
        steady_values = list(_steady_tps(run, row, one_client=len(result.clients) == 1))
        row.pgbench_version, row.command = client.pgbench_version, client.command
        row.started_epoch, row.rtt_ms, row.exit_status = client.started_epoch, client.rtt_ms, client.exit_status
        row.tps = summary.comparable_tps if summary else None
        row.latency_avg_ms = summary.latency_avg_ms if summary else None
        row.latency_stddev_ms = summary.latency_stddev_ms if summary else None
        row.latency_p50_ms = latency.p50_ms if latency else None
        row.latency_p95_ms = latency.p95_ms if latency else None
        row.latency_p99_ms = latency.p99_ms if latency else None
        row.steady_tps_mean = statistics.fmean(steady_values) if steady_values else None
        row.summary = dataclasses.asdict(summary) if summary else {}
        row.latency = dataclasses.asdict(latency) if latency else {}
        row.save()


def store_log(run: Run, observer: RunObserver, ending: str) -> None:
    """Keep the live log's last lines, and how the run ended, as the output "log.txt" of a run
    that ended without its results (failed or cancelled before them): its finished page shows
    what led there."""
    if not observer.log_tail:
        return  # it never reached a host
    content = "\n".join([*observer.log_tail, f"== {ending} =="]) + "\n"
    with_database_retry(
        lambda: RunArtifact.objects.update_or_create(run=run, name=RunArtifact.LOG_NAME, defaults={"content": content}),
        f"run {run.pk}: storing its log",
    )
