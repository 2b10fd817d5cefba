"""What a row of the run list says beyond the run's own columns: where a running run is
("measuring, second 16 of 30") and when its pgbench ends, what a queued one waits for ("lab2 busy
with run 19; 2 runs ahead", "lab2: run 4 ahead of it, waiting for lab1") and its workload in
words ("scale 10 · 8 clients · 2 threads · 20 s").

For a whole page at once and in a fixed number of queries, whatever its size: the newest sample
second comes with the page's own query (annotate_progress), the queue in three more queries and
only when queued runs are on the page. queue_waits.run_wait says the same for one run, at
more length, on its page.
"""

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Case, DateTimeField, IntegerField, OuterRef, QuerySet, Subquery, When

from runs.models import Driver, Host, Run, RunClient, RunOrigin, RunSample, RunState, RunTransition

# The states pgbench runs in: the newest sample says how far it is.
PGBENCH_STATES = (RunState.WARMING_UP, RunState.MEASURING)


def annotate_progress(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Adds `latest_second`, the newest sample's second, and `pgbench_started_at`, when its first
    pgbench step began, to the runs pgbench is running for (index lookups in the same query, and
    only for those runs: CASE evaluates them for them alone)."""
    newest = RunSample.objects.filter(run=OuterRef("pk")).order_by("-second").values("second")[:1]
    started = RunTransition.objects.filter(run=OuterRef("pk"), state__in=PGBENCH_STATES).order_by("at").values("at")
    return runs.annotate(
        latest_second=Case(When(state__in=PGBENCH_STATES, then=Subquery(newest)), output_field=IntegerField()),
        pgbench_started_at=Case(
            When(state__in=PGBENCH_STATES, then=Subquery(started[:1])), output_field=DateTimeField()
        ),
    )


def pgbench_ends_at(run: Run) -> datetime | None:
    """When a running run's pgbench ends: its planned seconds after it started (as the run page
    says it, bench.selectors.run_page.run_position); None for any other run."""
    started = getattr(run, "pgbench_started_at", None)
    return started + timedelta(seconds=run.warmup_run_s + run.warmup_s + run.duration_s) if started else None


@dataclass(frozen=True)
class RowStatus:
    """What follows a run's state in the list, and what the page's script needs to keep a
    running run's second current between reloads."""

    detail: str = ""  # "second 16 of 30", "lab2 busy with run 19; 2 runs ahead"; "" for nothing
    second: int | None = None  # pgbench's position within the current phase (warm-up or measuring)
    of: int | None = None  # the phase's length, seconds


@dataclass(frozen=True)
class RunRow:
    run: Run
    status: RowStatus
    workload: str  # its name
    workload_detail: list[str]  # scale, clients, threads, seconds
    pgbench_ends_at: datetime | None  # while pgbench runs
    imported_by: str | None = None  # an imported run's importer ("" if no longer in benchlab); None: measured


def imported_runs(runs: Sequence[Run]) -> dict[int, str]:
    """The page's imported runs and who imported each: one query while the list's own query
    leaves `origin` out (runs.forms.run_filters.LIST_COLUMNS), none for a page without imported
    runs once it reads it."""
    if "origin" in runs[0].get_deferred_fields():
        candidates = [run.pk for run in runs]
    else:
        candidates = [run.pk for run in runs if run.origin == RunOrigin.IMPORTED]
    if not candidates:
        return {}
    rows = Run.objects.filter(pk__in=candidates, origin=RunOrigin.IMPORTED)
    return {pk: name or "" for pk, name in rows.values_list("pk", "imported_by__username")}


def run_rows(runs: Sequence[Run]) -> list[RunRow]:
    """The page's runs with their status and workload summary (two queries if any is queued, one
    for the imported ones)."""
    waits = queue_waits([run for run in runs if run.state == RunState.QUEUED])
    imported = imported_runs(runs) if runs else {}
    return [
        RunRow(
            run,
            waits.get(run.pk) or progress(run),
            workload_name(run),
            workload_summary(run),
            pgbench_ends_at(run),
            imported.get(run.pk),
        )
        for run in runs
    ]


def progress(run: Run) -> RowStatus:
    """How far pgbench is: the second of the warm-up or of the measured duration (from 1)."""
    latest = getattr(run, "latest_second", None)
    if run.state == RunState.WARMING_UP and run.warmup_run_s and not latest:  # its separate warm-up run
        return RowStatus(f"warm-up run, {run.warmup_run_clients or run.clients} clients for {run.warmup_run_s:,} s")
    if run.state == RunState.WARMING_UP:
        return _position(latest or 0, run.warmup_s)
    if run.state == RunState.MEASURING:
        return _position((latest or run.warmup_s) - run.warmup_s, run.duration_s)
    return RowStatus()


def _position(second: int, of: int) -> RowStatus:
    second = max(0, min(second, of))
    return RowStatus(f"second {second} of {of}", second, of)


def workload_summary(run: Run) -> list[str]:
    """ "scale 10", "8 clients", "2 threads", "20 s" (to join with " · "); "5 s warm-up + 20 s" with
    a warm-up, as the run's page writes it."""
    seconds = f"{run.warmup_s:,} s warm-up + {run.duration_s:,} s" if run.warmup_s else f"{run.duration_s:,} s"
    if run.driver == Driver.SYSBENCH:  # its data is tables times rows; one thread per client
        return [
            f"{_count(run.sysbench_tables, 'table')} × {run.sysbench_table_size:,} rows",
            _count(run.clients, "client"),
            seconds,
        ]
    return [f"scale {run.scale:,}", _count(run.clients, "client"), _count(run.threads, "thread"), seconds]


def workload_name(run: Run) -> str:
    """ "TPC-B like", "select only": the workload's name without its pgbench switch."""
    return run.get_workload_display().split(" (", 1)[0]


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


@dataclass(frozen=True)
class _QueuedRun:
    pk: int
    hosts: frozenset[int]


@dataclass(frozen=True)
class _Queue:
    """The queue as the dispatcher sees it (jobs.dispatch), for the page's queued runs."""

    hosts: dict[int, Host]
    holders: set[int]  # runs that hold hosts: starting, not in line
    lines: dict[int, list[int]]  # per host, the queued runs that need it, in queue order
    needs: dict[int, frozenset[int]]  # per queued run in line, its hosts


def queue_waits(queued: Sequence[Run]) -> dict[int, RowStatus]:
    """For each queued run: its hosts that keep it waiting (disabled, busy, to be cleaned up) and
    how many queued runs are ahead of it on them; on a free host, which run is first ahead of it
    and what that one waits for. The dispatcher's view (jobs.dispatch)."""
    if not queued:
        return {}
    columns = ("id", "name", "enabled", "claimed_by", "claimed_by_build", "claimed_by_baseline", "cleanup_pending_for",
               "unreachable_since", "unreachable_error", "unreachable_retry_at")  # fmt: skip
    hosts = {host.pk: host for host in Host.objects.only(*columns)}
    holders = {host.claimed_by_id for host in hosts.values() if host.claimed_by_id}
    # A queued run that holds its hosts is starting, not in line: it is "busy with", not "ahead".
    in_line = [run for run in _queued_in_order(max(run.pk for run in queued)) if run.pk not in holders]
    queue = _Queue(hosts, holders, _lines_per_host(in_line), {run.pk: run.hosts for run in in_line})
    return {run.pk: _wait(run, queue) for run in queued}


def _queued_in_order(up_to: int) -> Iterable[_QueuedRun]:
    rows = Run.objects.filter(state=RunState.QUEUED, pk__lte=up_to).order_by("pk")
    clients: dict[int, set[int]] = defaultdict(set)
    for run_id, host_id in RunClient.objects.filter(run__in=rows).values_list("run_id", "host_id"):
        clients[run_id].add(host_id)
    for pk, server in rows.values_list("pk", "server_host_id"):
        yield _QueuedRun(pk, frozenset({server, *clients[pk]}))


def _lines_per_host(in_line: Iterable[_QueuedRun]) -> dict[int, list[int]]:
    """Per host, the ids of the queued runs that need it, in queue order."""
    lines: dict[int, list[int]] = defaultdict(list)
    for run in in_line:
        for host in run.hosts:
            lines[host].append(run.pk)
    return lines


def _wait(run: Run, queue: _Queue) -> RowStatus:
    hosts = (run.server_host_id, *(run_client.host_id for run_client in run.run_clients.all()))
    needed = sorted((queue.hosts[pk] for pk in hosts if pk in queue.hosts), key=_name)
    if run.pk in queue.holders:
        return RowStatus("starting: its hosts are claimed")
    reasons = [reason for host in needed if (reason := _blocked(host))]
    ahead = _ahead(run.pk, [queue.lines.get(host.pk, []) for host in needed])
    if not ahead:
        reasons.append("next in line")
    elif reasons:  # a host it needs is taken: that says why, and how many wait before it
        reasons.append(_count(ahead, "run") + " ahead")
    else:  # every host it needs is free: the runs ahead wait for something else, which is said
        reasons += [_ahead_on(host, run.pk, queue) for host in needed if _before(run.pk, queue.lines.get(host.pk, []))]
    return RowStatus("; ".join(reasons))


def _before(pk: int, line: list[int]) -> list[int]:
    return line[: bisect_left(line, pk)]


def _ahead_on(host: Host, pk: int, queue: _Queue) -> str:
    """On a free host: "lab2: run 4 ahead of it, waiting for lab1", or with more ahead, "lab2: 2
    runs ahead of it, the first (run 4) waiting for lab1"."""
    ahead = _before(pk, queue.lines[host.pk])
    first = ahead[0]
    waits_for = _waits_for(first, host.pk, queue)
    doing = f"waiting for {' and '.join(waits_for)}" if waits_for else "next to start"
    if len(ahead) == 1:
        return f"{host.name}: run {first} ahead of it, {doing}"
    return f"{host.name}: {len(ahead)} runs ahead of it, the first (run {first}) {doing}"


def _waits_for(pk: int, free_host: int, queue: _Queue) -> list[str]:
    """The hosts a run first in line on `free_host` waits for: its others that are taken, or where
    other runs are ahead of it."""
    others = sorted(
        (queue.hosts[h] for h in queue.needs.get(pk, frozenset()) - {free_host} if h in queue.hosts), key=_name
    )
    return [host.name for host in others if _blocked(host) or _before(pk, queue.lines.get(host.pk, []))]


def _name(host: Host) -> str:
    return host.name


def _blocked(host: Host) -> str:
    if not host.enabled:
        return f"{host.name} disabled"
    if host.unreachable_since:
        return f"{host.name} {host.unreachable_note}"
    if host.cleanup_pending_for_id:
        return f"{host.name} awaits cleanup after run {host.cleanup_pending_for_id}"
    if host.claimed_by_id:
        return f"{host.name} busy with run {host.claimed_by_id}"
    if host.claimed_by_build_id:
        return f"{host.name} busy with build {host.claimed_by_build_id}"
    if host.claimed_by_baseline_id:
        return f"{host.name} busy with fio baseline {host.claimed_by_baseline_id}"
    return ""


def _ahead(pk: int, lines: list[list[int]]) -> int:
    """The queued runs before `pk` that need one of its hosts, each counted once."""
    if len(lines) == 1:
        return bisect_left(lines[0], pk)
    return len({other for line in lines for other in line[: bisect_left(line, pk)]})
