"""Execute one queued run on the lab: drive runs/lab on the hosts the dispatcher claimed for it,
and store what comes out.

Called by the Celery task. What every job shares (the guard against a second delivery, the
start, the heartbeat, releasing the hosts and ending the run whatever happens) is
runs.jobs.execute; this module is the run's own part (RunExecution). Cleanup on the lab host
(stop PostgreSQL, unmount) is done by the lab layer on every path.
"""

import dataclasses
import logging
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

from runs.bench.services.drift_facts import drift_facts
from runs.bench.services.installs import run_installs_present
from runs.bench.services.lab_specs import benchmark_spec
from runs.bench.services.observer import RunCancelled, RunObserver
from runs.bench.services.pending_cleanup import mark_cleanup_pending, pending_note
from runs.bench.services.results import (
    RunFacts,
    mark_results_stored,
    reuse_said,
    store_log,
    store_results,
    store_stage_times,
)
from runs.bench.services.reuse import discard_setups, record_kept, reuse_plan
from runs.bench.services.runs import pick_seed
from runs.common.db_retry import with_database_retry
from runs.inventory.services.connect import host_connect, host_connect_for_run
from runs.inventory.services.own_server import own_server_assert_closed
from runs.jobs.cancel_watch import CancelWatch
from runs.jobs.execute import Execution, away_ending, command_failed, job_execute
from runs.jobs.host_reach import HostAway
from runs.jobs.kinds import KINDS, RUN
from runs.jobs.transitions import run_transition
from runs.lab.benchmark.run import (
    BenchmarkResult,
    BenchmarkSpec,
    Endpoint,
    remove_run_dir,
    run_benchmark,
)
from runs.lab.errors import CommandFailed, LabError, StorageFailed, tail
from runs.lab.host.probe import probe_host
from runs.lab.transport.interface import Transport
from runs.lab.transport.reconnect import ReconnectingTransport
from runs.models import Host, Run, RunState

log = logging.getLogger(__name__)


Ending = tuple[RunState, dict[str, Any]]  # the final state and the fields that go with it


class RunExecution(Execution[Run]):
    """A run, done by its worker (jobs.execute does the rest): it needs its server and every client
    host, its start is a stamp (its state moves with its steps, each in its history), and its
    heartbeat stores how far pgbench's output has been stored (RunObserver.followed)."""

    kind = KINDS[RUN]
    started_state = None
    failed_state = RunState.FAILED

    @classmethod
    def load(cls, job_id: int) -> Run:
        return run_for_worker(job_id)

    @property
    def hosts(self) -> list[Host]:
        return self.job.hosts

    def transition(self, state: str, from_state: str | None = None, **fields: Any) -> bool:
        before = None if from_state is None else RunState(from_state)
        return run_transition(run=self.job, state=RunState(state), from_state=before, **fields)

    def refusal(self) -> str | None:
        # Runs on benchlab's own server were forbidden after this run was queued.
        return next((refusal for host in self.job.hosts if (refusal := host.own_server_refusal())), None)

    def start(self, now: datetime, worker: str) -> bool:
        run = self.job
        run.started_at, run.worker = now, worker
        started = Run.objects.filter(pk=run.pk, state=RunState.QUEUED, started_at__isnull=True)

        def stamp() -> bool:  # safe to repeat: a stamp whose commit's answer was lost is found as ours
            mine = Run.objects.filter(pk=run.pk, started_at=run.started_at, worker=run.worker)
            return bool(started.update(started_at=run.started_at, worker=run.worker)) or mine.exists()

        return with_database_retry(stamp, f"run {run.pk}: stamping its start")

    def heartbeat_fields(self) -> dict[str, Any]:
        return {"progress_offset": self.job.progress_offset}

    def work(self) -> Ending:
        return _execute_claimed(self.job)


def run_execute(*, run_id: int) -> str:
    """Run it: the dispatcher (jobs.dispatch) has claimed its hosts for it (jobs.execute.job_execute
    says what it returns; bench.services.sweeper ends a run whose worker died)."""
    return job_execute(RunExecution, run_id)


def _execute_claimed(run: Run) -> Ending:
    observer = RunObserver(run)
    if observer.check_cancel():  # cancelled while its worker was starting it: no host is touched
        return RunState.CANCELLED, {}
    with CancelWatch(run, observer.cancel_now):
        return _execute_watched(run, observer)


def _execute_watched(run: Run, observer: RunObserver) -> Ending:
    if run.random_seed is None:  # queued before runs had seeds: one picked now, and recorded
        run.random_seed = pick_seed()
        Run.objects.filter(pk=run.pk, random_seed__isnull=True).update(random_seed=run.random_seed)
    try:
        spec = benchmark_spec(run)
        transport, clients = connect_hosts(run)
    except HostAway as away:  # nothing started on any host: it waits for the host (jobs.host_reach)
        return away_ending(away, RunState.QUEUED, RunState.FAILED, note=away.wait)
    except Exception as exc:  # noqa: BLE001 - e.g. a refused host key, an undecryptable key
        return failure(observer, exc)
    ending: Ending | None = None
    try:
        facts = run_facts(run, transport, clients)
        run_installs_present(run, transport, clients)  # before anything touches storage
        own_server_assert_closed(zip(run.hosts, [transport, *(c.transport for c in clients)], strict=True))
        result = _run_with_reuse(run, transport, spec, observer, clients, facts)
    except RunCancelled:
        ending = RunState.CANCELLED, {}
    except Exception as exc:  # noqa: BLE001 - every failure ends the run as failed, with its reason
        ending = (RunState.CANCELLED, {}) if observer.cancelled else failure(observer, exc)
    finally:
        pending = close_hosts(run, spec, transport, clients)
    if ending is not None:
        store_log(run, observer, ending_said(ending))
    else:  # its results were stored before the cleanup (store_when_collected)
        store_stage_times(run, result)
        ending = result_ending(result, observer)
    return with_pending_cleanup(ending, pending)


def run_facts(run: Run, transport: Transport, clients: Sequence[Endpoint], reused_from: int | None = None) -> RunFacts:
    """The hosts as they are before the measurement: stored with its results."""
    clients_facts = [probe_host(client.transport).as_json() for client in clients]
    return RunFacts(probe_host(transport).as_json(), clients_facts, drift_facts(transport, run), reused_from)


def store_when_collected(run: Run, observer: RunObserver, facts: RunFacts) -> None:
    """The results go to the database as soon as the lab layer has collected them, before it
    cleans up, with how they end the run: a worker that dies in the cleanup loses nothing
    (bench.services.sweeper finishes the cleanup and ends the run from what is stored)."""

    def store(result: BenchmarkResult) -> None:
        observer.reuse = reuse_said(facts.reused_from, result)
        store_results(run, result, facts.host, facts.clients, observer, facts.drift)
        state, fields = result_ending(result, observer)
        mark_results_stored(run, fields if state == RunState.FAILED else {})

    observer.on_collected = store


def run_for_worker(run_id: int) -> Run:
    """The run with what running it reads: its hosts, device, install and client hosts."""
    runs = Run.objects.select_related("server_host", "device", "pg_install", "queued_by")
    return runs.prefetch_related("run_clients__host").get(pk=run_id)


def connect_hosts(run: Run) -> tuple[ReconnectingTransport, list[Endpoint]]:
    """Connections to the run's server and to each of its client hosts, each opened again when
    it is lost (with a way to open another one to a client, for following its pgbench)."""
    transport = host_connect_for_run(run.server_host)
    clients: list[Endpoint] = []
    try:
        for client_host in run.client_host_list:
            connect = partial(host_connect, client_host)
            clients.append(Endpoint(host_connect_for_run(client_host), connect))
    except BaseException:
        for opened in [transport, *(client.transport for client in clients)]:
            opened.close()
        raise
    return transport, clients


def close_hosts(run: Run, spec: BenchmarkSpec, transport: Transport, clients: Sequence[Endpoint]) -> str:
    """Remove the run's directory on each host (its record and outputs are stored by now) and
    disconnect. A host that stayed unreachable keeps what the run left until it answers again
    (bench.services.pending_cleanup): returns a note saying so, or ""."""
    connections = [(run.server_host, transport)]
    connections += list(zip(run.client_host_list, (client.transport for client in clients), strict=False))
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
    if not note or note in fields.get("error", ""):  # said already (a reattach's own cleanup)
        return ending
    if state == RunState.DONE:
        state, fields = RunState.FAILED, fields | {"failed_step": RunState.CLEANING_UP}
    return state, fields | {"error": "; ".join(filter(None, [fields.get("error", ""), note]))}


def ending_said(ending: Ending) -> str:
    """An ending in a line of the run's log: "failed: <why>" or "cancelled"."""
    state, fields = ending
    return f"{state.label}: {fields['error']}" if fields.get("error") else str(state.label)


def result_ending(result: BenchmarkResult, observer: RunObserver) -> Ending:
    """How a run whose results are stored ends: cancelled, failed with pgbench's reason, or done."""
    if observer.cancelled:
        return RunState.CANCELLED, {}
    if result.exit_status != 0:
        # Several client hosts: the one whose pgbench failed is named, its stderr shown.
        failed = next((client for client in result.clients if client.name == result.failed_client), None)
        if failed is not None:
            return RunState.FAILED, {
                "failed_step": RunState.MEASURING,
                "failed_command": failed.command,
                "failed_exit_status": result.exit_status,
                "failed_output": tail(failed.stderr),
                "error": result.failure,
            }
        return RunState.FAILED, {
            "failed_step": RunState.MEASURING,
            "failed_command": result.command,
            "failed_exit_status": result.exit_status,
            # sysbench says why on stdout (its stderr stays empty)
            "failed_output": tail(result.stdout if result.sysbench is not None else result.stderr),
            "error": f"{observer.run.driver} failed",
        }
    return RunState.DONE, {}


def _run_with_reuse(
    run: Run,
    transport: Transport,
    spec: BenchmarkSpec,
    observer: RunObserver,
    clients: Sequence[Endpoint],
    facts: RunFacts,
) -> BenchmarkResult:
    """The benchmark, starting from a setup an earlier run of the campaign kept when there is
    one, and keeping this one's for the next run when it shares it (bench.services.reuse)."""
    plan = reuse_plan(run)
    store_when_collected(run, observer, dataclasses.replace(facts, reused_from=plan.reused_from))
    discard_setups(transport, plan.discard)
    kept = None
    try:
        result = run_benchmark(
            transport,
            lambda: host_connect(run.server_host),
            spec,
            observer,
            clients=clients,
            reuse=plan.reuse,
            keep=plan.keep,
        )
        kept = result.kept
        return result
    finally:
        if plan.reuse is not None or plan.keep:
            record_kept(run, kept)  # the lab layer has taken over (or cleaned up) the reused setup


def failure(observer: RunObserver, exc: Exception) -> Ending:
    """A failed run's fields: the step it failed in, why, and the failing command's output (or
    the last lines of the run's log)."""
    # A failed device is named as the inventory names it ("host:device"), not by its path.
    error = exc.describe(str(observer.run.device)) if isinstance(exc, StorageFailed) else str(exc)
    fields: dict[str, Any] = {"failed_step": observer.current_step, "error": error}
    last_lines = "\n".join(list(observer.log_tail)[-40:])
    if isinstance(exc, CommandFailed):
        fields |= command_failed(exc.command, exc.exit_status, exc.stderr or exc.stdout, "\n".join(observer.log_tail))
    elif isinstance(exc, StorageFailed) and exc.command:  # the command the failed storage broke
        fields |= command_failed(exc.command, exc.exit_status, exc.output, last_lines)
    else:
        fields["failed_output"] = last_lines
    log.warning("run %s failed in %s: %s", observer.run.pk, observer.current_step, exc)
    return RunState.FAILED, fields
