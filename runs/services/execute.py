"""Execute one queued run on the lab: claim its hosts, drive runs/lab, store what comes out.

Called by the Celery task. Cleanup on the lab host (stop PostgreSQL, unmount) is done by the
lab layer on every path; this module makes sure the run ends in done, failed or cancelled
and that its hosts are released whatever happens.
"""

import dataclasses
import logging
import socket
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from django.utils import timezone

from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.jobs.hooks import job_ended
from runs.lab.benchmark import (
    BenchmarkResult,
    BenchmarkSpec,
    Endpoint,
    remove_run_dir,
    run_benchmark,
)
from runs.lab.errors import CommandFailed, LabError, StorageFailed, tail
from runs.lab.probe import probe_host
from runs.lab.reconnect import ReconnectingTransport
from runs.lab.transport import Transport
from runs.models import (
    Run,
    RunState,
)
from runs.queue_waits import run_holds_its_hosts
from runs.services.cancel_watch import CancelWatch
from runs.services.db_retry import with_database_retry
from runs.services.drift_facts import drift_facts
from runs.services.heartbeat import run_has_live_worker, run_heartbeat
from runs.services.host_reach import NOT_STARTED, HostAway
from runs.services.lab_access import host_connect, host_connect_for_run
from runs.services.lab_specs import benchmark_spec
from runs.services.own_server import own_server_assert_closed
from runs.services.pending_cleanup import mark_cleanup_pending, pending_note
from runs.services.reuse import discard_setups, record_kept, reuse_plan
from runs.services.run_installs import run_installs_present
from runs.services.run_observer import RunCancelled, RunObserver
from runs.services.run_results import (
    RunFacts,
    mark_results_stored,
    reuse_said,
    store_log,
    store_results,
    store_stage_times,
)
from runs.services.runs import run_transition

log = logging.getLogger(__name__)


Ending = tuple[RunState, dict[str, Any]]  # the final state and the fields that go with it


def run_execute(*, run_id: int) -> str:
    """Run it: the dispatcher (services.queue) has claimed its hosts for it. Returns "waiting"
    (it does not hold its hosts: the dispatcher sends it again when its turn comes), "running"
    (another worker is running it: look again later), "abandoned" (the worker that started it
    died: services.sweeper ends it), or the state it ended in ("queued" again when a host did not
    answer at its start: services.host_reach)."""
    run = run_for_worker(run_id)
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
        release_hosts(run)
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
        release_hosts(run)
    if not run_transition(run=run, state=state, **fields):
        run.refresh_from_db(fields=["state"])  # ended meanwhile from outside: cancelled while starting
    run_after_end(run)
    return run.state


def run_after_end(run: Run) -> None:
    """The run has ended: what follows (an adaptive campaign's next round: jobs.hooks), then the
    next in line starts."""
    job_ended(run)
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
        transport, clients = connect_hosts(run)
    except HostAway as away:  # nothing started on any host: it waits for the host (services.host_reach)
        return (RunState.FAILED, {"error": away.failure}) if away.overdue else back_in_line(away)
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


def back_in_line(away: HostAway) -> Ending:
    """Queued again, as it was before its worker took it (its hosts are released as ever)."""
    return RunState.QUEUED, NOT_STARTED | {"note": away.wait}


def run_facts(run: Run, transport: Transport, clients: Sequence[Endpoint], reused_from: int | None = None) -> RunFacts:
    """The hosts as they are before the measurement: stored with its results."""
    clients_facts = [probe_host(client.transport).as_json() for client in clients]
    return RunFacts(probe_host(transport).as_json(), clients_facts, drift_facts(transport, run), reused_from)


def store_when_collected(run: Run, observer: RunObserver, facts: RunFacts) -> None:
    """The results go to the database as soon as the lab layer has collected them, before it
    cleans up, with how they end the run: a worker that dies in the cleanup loses nothing
    (services.sweeper finishes the cleanup and ends the run from what is stored)."""

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
    (services.pending_cleanup): returns a note saying so, or ""."""
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
            "failed_output": tail(result.stderr),
            "error": "pgbench failed",
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
    one, and keeping this one's for the next run when it shares it (services.reuse)."""
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
