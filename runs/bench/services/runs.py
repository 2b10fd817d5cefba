"""Writes to runs: queue, move through states (cancelling one is runs.jobs.cancel). Every state
change is a conditional UPDATE (a finished run never changes again), recorded with its time and
published live."""

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.http import HttpRequest

from runs.bench.specs import CLIENTS, MODEL_FIELDS, RunSpec, configuration_key
from runs.common.services.audit import audit_record
from runs.jobs import live
from runs.jobs.dispatch import queue_dispatch
from runs.jobs.transitions import _publish_state
from runs.models import MAX_CLIENT_HOSTS, AuditAction, Host, Run, RunClient, RunState, RunTransition, Workload
from runs.models.run_clients import client_database


def run_enqueue(*, run: Run, client_host_ids: Sequence[int] = (), request: HttpRequest | None = None) -> Run:
    """Save a new run as queued (queued_by set by the caller), last in line on its hosts, with its
    client hosts (ids, in their order; none: pgbench on the server); it starts when its turn comes
    (jobs.dispatch)."""
    return runs_enqueue(runs=[run], client_host_ids=[client_host_ids], request=request)[0]


def runs_enqueue(
    *, runs: Sequence[Run], client_host_ids: Sequence[Sequence[int]], request: HttpRequest | None = None
) -> Sequence[Run]:
    """Queue runs in this order, each with its client hosts (client_host_ids[i]: run i's, in their
    order), all or none, with one dispatch once they are committed. ValueError, before anything
    is written, for clients that spec_errors would have refused (repeated, the server, too many)."""
    if len(client_host_ids) != len(runs):
        raise ValueError(f"{len(runs)} runs but client hosts for {len(client_host_ids)}")
    clients = [tuple(ids) for ids in client_host_ids]
    for run, ids in zip(runs, clients, strict=True):
        _check_clients(run, ids)
    names = Host.objects.in_bulk({pk for ids in clients for pk in ids})
    if missing := {pk for ids in clients for pk in ids} - set(names):
        raise ValueError(f"no host {', '.join(map(str, sorted(missing)))} in the inventory")
    with transaction.atomic():
        for run, ids in zip(runs, clients, strict=True):
            _queue_one(run, ids, names, request)
        # A worker must never look for a run that is not committed yet.
        transaction.on_commit(queue_dispatch)
    return runs


def _check_clients(run: Run, ids: tuple[int, ...]) -> None:
    """What the database's constraints would refuse halfway through, refused before it starts."""
    if len(set(ids)) != len(ids):
        raise ValueError(f"client hosts {list(ids)} name a host twice")
    if len(ids) > MAX_CLIENT_HOSTS:
        raise ValueError(f"{len(ids)} client hosts: a run has at most {MAX_CLIENT_HOSTS}")
    if run.server_host_id in ids:
        raise ValueError(f"host {run.server_host_id} is the run's server: it cannot be one of its client hosts")


def pick_seed() -> int:
    """A random seed for pgbench: below 2^31, so it reads at a glance and any pgbench takes it."""
    return 1 + secrets.randbelow(2**31 - 1)  # never 0: sysbench reads --rand-seed=0 as "from the clock"


def _queue_one(run: Run, ids: tuple[int, ...], hosts: Mapping[int, Host], request: HttpRequest | None) -> None:
    run.state = RunState.QUEUED
    if run.random_seed is None:  # recorded before it runs: "Run again" and a retry can use it again
        run.random_seed = pick_seed()
    run.shared_database = bool(run.shared_database) and len(ids) >= 2  # only means something then
    if run.workload == Workload.LIBRARY and run.library_script is not None:
        # Every parameter's value (the defaults filled in) and the text pgbench will run, kept with
        # the run: an admin's later version of the script changes nothing here.
        run.workload_params = run.library_script.values(run.workload_params)
        run.script_as_run = run.library_script.rendered(run.workload_params)
    run.series_key = series_key_of(run, ids)
    run.save()
    RunClient.objects.bulk_create(
        RunClient(
            run=run, host_id=pk, position=position, database=client_database(position, len(ids), run.shared_database)
        )
        for position, pk in enumerate(ids, start=1)
    )
    RunTransition.objects.create(run=run, state=RunState.QUEUED, at=run.created_at)
    audit_record(
        action=AuditAction.RUN_QUEUED,
        target=run,
        actor=run.queued_by,
        request=request,
        message=_describe(run, [hosts[pk].name for pk in ids]),
    )
    # In this order: an empty stream, "queued" first in it, then the worker may publish.
    transaction.on_commit(lambda: live.reset_run_stream(run.pk))
    transaction.on_commit(lambda: _publish_state(run, RunState.QUEUED))


def series_key_of(run: Run, client_host_ids: Sequence[int]) -> str:
    """The key of the series a run about to be saved belongs to (runs.watch.series), from its values
    as the database will hand them back (a campaign's rate of 250 is read as 250.0): the key the
    watch's migration computed for older runs from their rows, so old and new runs of one
    configuration share it."""
    values: dict[str, Any] = {name: field.to_python(getattr(run, name)) for name, field in MODEL_FIELDS.items()}
    return configuration_key(RunSpec(**values | {CLIENTS: tuple(client_host_ids)}))


def _describe(run: Run, client_names: Sequence[str]) -> str:
    where = f"{run.server_host.name}:{run.device.name} {run.filesystem}"
    text = f"{where}, {run.workload} scale {run.scale}, {run.clients} clients, {run.duration_s} s"
    if client_names:
        databases = "one database" if run.shared_database or len(client_names) == 1 else "own databases"
        text += f", pgbench on {', '.join(client_names)} ({databases})"
    return text
