"""The separate warm-up run (seed 004: five minutes at 10 clients, then the measured five at 20):
pgbench with the measurement's workload and options but its own clients and seconds, in the same
cluster, after the state before measuring (its CHECKPOINT and settle pause) and right before the
measurement, as the seed ran them.

It runs detached and followed as the measurement does (a cancel stops it: the observer is told it
started), its progress lines go to the observer on their own stream (WARMUP_STREAM: shown as the
warm-up phase, never as the measurement's seconds), and its per-second aggregate log goes to a
directory of its own, which nothing that collects the measurement reads. Nothing of it is part of
the results: the statistics before the measurement are taken after it (stages.ready_benches).

A worker that dies during the warm-up leaves no resume record (it is written when the measurement
starts): the reattaching worker does not start the measurement, the run fails saying the warm-up
was interrupted, and its hosts are cleaned up by run key (resume.py, abandon.py).
"""

import dataclasses

from runs.lab.benchmark.clients import started_epoch
from runs.lab.benchmark.measure import prepare_benches
from runs.lab.benchmark.results import BenchmarkResult, WarmupRun
from runs.lab.benchmark.spec import Step, work_dir_for
from runs.lab.benchmark.stages import Stages, timed
from runs.lab.errors import LabError
from runs.lab.host.run_user import RUN_USER, run_as_run_user
from runs.lab.options import RunOptions
from runs.lab.parse.pgbench_summary import parse_summary
from runs.lab.pgbench.follow import Follower
from runs.lab.storage.diagnose import command_output_tail
from runs.lab.transport.process import cancel, start_detached, wait_for_exit

WARMUP_NAME = "pgbench-warmup"  # its files in the work dir: pgbench-warmup.{stdout,stderr,exit,started}
WARMUP_STREAM = "warmup"  # the observer's stream of its lines
WARMUP_LOG_DIR = "warmup"  # under the work dir: its aggregate log, apart from the measurement's


def warmup_options(run: RunOptions, seconds: int, clients: int | None) -> RunOptions:
    """The measurement's options with the warm-up's clients (its threads at most those) and seconds,
    and only pgbench's per-second aggregate log (a per-transaction log of minutes is not kept)."""
    count = clients or run.clients
    return dataclasses.replace(
        run, clients=count, threads=min(run.threads, count), duration_s=seconds, log_sampling_rate=None
    )


def warm_up(run: Stages, result: BenchmarkResult) -> None:
    """The warm-up run, followed to its end; nothing when the run asks for none. LabError if it
    failed (StorageFailed if the device is why). A cancel stops its pgbench (the observer was told
    it started), which then exits non-zero: the run ends cancelled, before anything is measured."""
    spec = run.spec
    if not spec.warmup_run_s:
        return
    if len(run.benches) != 1:
        raise ValueError("a warm-up run is for pgbench on the server or on one client host")
    assert run.cluster is not None and run.watch is not None and run.storage is not None
    run.observer.step(Step.WARMING_UP)
    run.watch.doing, run.watch.scale = "warming up", None
    bench = run.benches[0]
    transport = bench.endpoint.transport
    work_dir = work_dir_for(run.run_dir)
    log_dir = f"{work_dir}/{WARMUP_LOG_DIR}"
    run_as_run_user(transport, ["mkdir", "-p", "--", log_dir])
    script_path = None
    if spec.run.custom_script is not None:  # where ready_benches puts it for the measurement too
        script_path = f"{run.run_dir}/custom.sql"
        transport.write_file(script_path, spec.run.custom_script.encode(), mode=0o644)
    options = warmup_options(spec.run, spec.warmup_run_s, spec.warmup_run_clients)
    (warming,) = prepare_benches(dataclasses.replace(spec, run=options), run.cluster, [bench], log_dir, script_path)
    warmup = WarmupRun(warming.command_text, options.clients, options.duration_s)
    result.warmup_run = warmup
    process = start_detached(transport, warming.command, work_dir, WARMUP_NAME, user=RUN_USER)
    on_server = bench.endpoint is run.server
    if on_server:
        run.storage.own_pids.append(process.pid)
    run.cleanup.callback(cancel, transport, process, 2.0)  # a no-op once it has exited
    run.observer.started(process, on=None if on_server else bench.name)
    stream = WARMUP_STREAM if on_server else f"{WARMUP_STREAM}@{bench.name}"
    follower = Follower(bench.endpoint.connect, process, "stderr", lambda text: run.observer.line(stream, text),
                        max_reconnect_s=spec.unreachable_limit_s)  # fmt: skip
    with timed(run.seconds, "warm-up run"):  # BenchmarkResult.stages: where the run's time went
        follower.follow(spec.warmup_run_s + 120)
    warmup.exit_status = wait_for_exit(transport, process, 60)
    warmup.started_epoch = started_epoch(transport, process)
    stdout = run_as_run_user(transport, ["cat", "--", process.path("stdout")], check=False).stdout
    summary = parse_summary(stdout)
    warmup.tps, warmup.latency_avg_ms = summary.tps, summary.latency_avg_ms
    if warmup.exit_status != 0:
        stderr = command_output_tail(transport, process.path("stderr"))
        run.watch.raise_if_faulty(warmup.command, warmup.exit_status, stderr)
        raise LabError(f"the warm-up run failed (exit status {warmup.exit_status}): {stderr.strip()[-500:]}")
