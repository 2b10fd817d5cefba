"""One benchmark on one lab host, start to finish: the lab layer's pieces in order.

The stages are in stages.py; this module runs them in order:
storage (check, mkfs, mount) → throw-away cluster (initdb, settings, start) → `pgbench -i`
→ the state before measuring (state.py: cold or warm, frozen data, CHECKPOINT, settle)
→ a separate warm-up run, if asked for (warmup.py: its own clients and seconds, same cluster)
→ detached `pgbench` followed line by line, with iostat/vmstat and PostgreSQL statistics
around it → results → cleanup, which runs on every path because each stage is a context
manager. An observer hears about steps and progress as they happen.

pgbench runs on the server itself (over the unix socket), or on client hosts over TCP: then
the cluster listens on the network and trusts exactly those clients' addresses, and each
client's round trip to it is measured. Several client hosts measure together, each against
its own database or all against one (clients.py). Databases are always loaded on the server
(`pgbench -i` over the socket), every one before any client starts: loading is not what is
measured, and it does not depend on the network.

A run may keep its storage and stopped cluster for the next run of the same setup (keep=True),
and a run may start from such a kept setup (reuse=...) instead of mkfs and `pgbench -i`; see
kept.py. A kept setup given to a run is used up by it on every path: reused, or discarded.

When the measurement starts, a record of it goes into the run directory (collect.py): if the
worker running this dies, another one follows pgbench to its end and finishes the run from
there (resume.py). The results go to the observer (collected) before anything is cleaned up:
a worker that dies in the cleanup has kept them.

A failure once the storage is prepared, or a pgbench that exits non-zero, is looked into
(diagnose.py): when the device is why (I/O errors, a full disk), the run fails with
StorageFailed, which says so in PostgreSQL's and the kernel's words.
"""

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack

from runs.lab.benchmark import stages
from runs.lab.benchmark.drivers import driver_for
from runs.lab.benchmark.results import BenchmarkResult as BenchmarkResult  # re-exported: the service stores these
from runs.lab.benchmark.spec import RUNS_ROOT as RUNS_ROOT  # the names below are re-exported: callers
from runs.lab.benchmark.spec import WORK_SUBDIR as WORK_SUBDIR  # know the lab layer's run by this module
from runs.lab.benchmark.spec import Bench, Endpoint, Observer, SilentObserver
from runs.lab.benchmark.spec import BenchmarkSpec as BenchmarkSpec
from runs.lab.benchmark.spec import ClientSpec as ClientSpec
from runs.lab.benchmark.spec import Step as Step
from runs.lab.benchmark.spec import run_dir_for as run_dir_for
from runs.lab.benchmark.spec import work_dir_for as work_dir_for
from runs.lab.benchmark.stages import Stages
from runs.lab.benchmark.warmup import warm_up
from runs.lab.storage.kept import Handover, handed_over
from runs.lab.storage.kept import KeptSetup as KeptSetup  # re-exported: the service stores and hands these back
from runs.lab.storage.kept import discard_kept_setup as discard_kept_setup
from runs.lab.transport.interface import Transport


def run_benchmark(
    transport: Transport,
    connect: Callable[[], Transport],
    spec: BenchmarkSpec,
    observer: Observer | None = None,
    clients: Sequence[Endpoint] = (),
    reuse: KeptSetup | None = None,
    keep: bool = False,
) -> BenchmarkResult:
    """Run the whole benchmark; cleanup (stop PostgreSQL, unmount) happens on every path.

    `connect` opens a fresh connection to the same host: the follower reconnects with it
    when the connection is lost mid-run. `clients` are where pgbench runs when spec.clients
    names client hosts, in the same order. `reuse` is a setup an earlier run kept on this host: used
    if it still fits, discarded otherwise (result.reused, result.reuse_refused), and gone
    from the host after the call in any case unless kept again. With `keep`, a run that
    succeeded leaves its storage and stopped cluster on the host (result.kept). A kept setup
    holds one database: a run with a database per client host neither reuses nor keeps one.
    """
    observer = observer or SilentObserver()
    server = Endpoint(transport, connect)
    seconds: dict[str, float] = {}  # each stage's (result.stages)
    with ExitStack() as cleanup:
        cleaning_up_from = [0.0]  # the cleanups unwind from here to the first callback's end
        cleanup.callback(lambda: seconds.update(cleanup=time.monotonic() - cleaning_up_from[0]))
        # Unwound last: a kept setup the run did not get to take over is discarded.
        handover = cleanup.enter_context(handed_over(transport, reuse)) if reuse is not None else None
        # Refuse a bad specification, or a host without the driver, before the run touches the host.
        driver = driver_for(spec.driver)
        driver.validate(spec)
        spec.state.validate()
        driver.check_host(transport, spec)
        if len(spec.clients) != len(clients):
            raise ValueError("each client host needs both its specification and its connection")
        if (reuse is not None or keep) and len(spec.databases) > 1:
            raise ValueError("a run with a database per client host cannot reuse or keep a setup")
        run_dir = run_dir_for(spec.run_key)
        benches = [Bench(c.name, endpoint, c) for c, endpoint in zip(spec.clients, clients, strict=True)]
        run = Stages(server, benches or [Bench(None, server, None)], spec, observer, cleanup, run_dir, seconds)
        try:
            return _run_stages(run, handover, keep)
        finally:
            # Runs before the stages' own cleanups unwind (unmount, stop PostgreSQL).
            observer.step(Step.CLEANING_UP)
            cleaning_up_from[0] = time.monotonic()


def _run_stages(run: Stages, handover: Handover | None, keep: bool) -> BenchmarkResult:
    result = stages.prepare_storage(run, handover)
    stages.start_cluster_and_load(run, result)
    stages.state_before_measuring(run, result)
    warm_up(run, result)  # the separate warm-up run, if any (warmup.py)
    stages.ready_benches(run, result)
    metrics = stages.measure(run, result)
    stages.collect(run, result, metrics)
    if keep and result.exit_status == 0:
        stages.keep(run, result)
    run.observer.collected(result)  # before the cleanups unwind: kept even if this process dies in them
    return result


def remove_run_dir(transport: Transport, run_key: str) -> None:
    transport.run(["rm", "-rf", "--", run_dir_for(run_key)], check=False)
