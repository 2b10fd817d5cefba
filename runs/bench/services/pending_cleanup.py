"""Cleaning up what a run left on a host from outside the run, now or once the host answers again.

A run's own cleanup (unmount, stop PostgreSQL) needs its host. A host that stopped answering
mid-run, past BENCHLAB_HOST_UNREACHABLE_S, fails the run without it: the mount, PostgreSQL and
maybe pgbench stay there. Such a host is marked (Host.cleanup_pending_for) and takes no run
(jobs.dispatch skips it); Celery beat calls retry_pending_cleanups() every 30 s, which removes
what the run left by its run key (runs/lab/benchmark/abandon.py) as soon as the host answers, and frees it.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Value
from django.db.models.functions import Concat
from django.utils import timezone

from runs.bench.services.lab_specs import benchmark_spec
from runs.bench.services.reuse import discard_setups
from runs.inventory.services.connect import host_connect
from runs.jobs.dispatch import queue_dispatch
from runs.lab.benchmark.abandon import clean_up_abandoned_run
from runs.lab.storage.kept import KeptSetup
from runs.lab.transport.interface import Transport
from runs.models import Device, Host, Run

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostCleanup:
    host: Host
    words: str  # what was done, or why not, for the run's record
    unreachable: bool = False  # nothing was done: the host did not answer


def clean_up_on_host(run: Run, host: Host) -> HostCleanup:
    """Remove what the run left on the host (abandon.py) over a new connection."""
    spec = benchmark_spec(run)
    try:
        transport = host_connect(host)
    except Exception as exc:  # noqa: BLE001 - unreachable, a refused key: said in the run's error
        return HostCleanup(host, f"{host.name} could not be reached to clean up: {_reason(exc)}", unreachable=True)
    try:
        done = clean_up_abandoned_run(transport, spec.run_key, spec.device)
        if host.pk == run.server_host_id:
            _discard_taken_over_setup(run, transport)
        return HostCleanup(host, f"cleaned up on {host.name}: {done}")
    except Exception as exc:  # noqa: BLE001 - whatever failed is said, the run still ends
        return HostCleanup(host, f"cleanup on {host.name} failed: {_reason(exc)}")
    finally:
        transport.close()


def clean_up_run_hosts(run: Run) -> list[str]:
    """Remove what the run left on each of its hosts now; a host that does not answer is marked
    for later. What was done, in words for the run's error."""
    cleanups = [clean_up_on_host(run, host) for host in run.hosts]
    pending = mark_cleanup_pending(run, [c.host for c in cleanups if c.unreachable])
    return [c.words for c in cleanups] + ([pending_note(pending)] if pending else [])


def mark_cleanup_pending(run: Run, hosts: Iterable[Host]) -> list[str]:
    """These hosts still hold what `run` left: they take no run until it is removed. Their names."""
    hosts = list(hosts)
    Host.objects.filter(pk__in=[h.pk for h in hosts]).update(cleanup_pending_for=run)
    for host in hosts:
        log.warning("%s holds what run %s left; it is cleaned up when the host answers again", host.name, run.pk)
    return [h.name for h in hosts]


def pending_note(names: list[str]) -> str:
    """The end of a failed run's error, for hosts left to clean up later."""
    return f"cleanup pending on {', '.join(names)}: it is done when the host answers again" if names else ""


def retry_pending_cleanups() -> list[int]:
    """Clean up every host waiting for it that answers now; the ids of the hosts freed."""
    freed = []
    pending = Host.objects.filter(cleanup_pending_for__isnull=False).order_by("pk")
    related = ["cleanup_pending_for__server_host", "cleanup_pending_for__device", "cleanup_pending_for__pg_install"]
    for host in pending.select_related(*related).prefetch_related("cleanup_pending_for__run_clients__host"):
        run = host.cleanup_pending_for
        assert run is not None
        cleanup = clean_up_on_host(run, host)
        if cleanup.unreachable:
            continue
        # Freed even if something could not be removed: that is said, and a person looks at it
        # (the next run's safety checks refuse a device that is still mounted).
        Host.objects.filter(pk=host.pk, cleanup_pending_for=run).update(cleanup_pending_for=None)
        when = timezone.localtime().strftime("%H:%M:%S %Z")
        Run.objects.filter(pk=run.pk).update(error=Concat("error", Value(f"; at {when}, {cleanup.words}")))
        log.warning("run %s: %s", run.pk, cleanup.words)
        freed.append(host.pk)
    if freed:
        queue_dispatch()
    return freed


def _discard_taken_over_setup(run: Run, transport: Transport) -> None:
    """A run that reused a setup kept by an earlier run mounted it under that run's name."""
    kept = Device.objects.filter(pk=run.device_id).values_list("kept_setup", flat=True).first()
    if kept:
        discard_setups(transport, [(run.device, KeptSetup.from_json(kept["setup"]))])


def _reason(exc: Exception) -> str:
    # A ValidationError (an undecryptable key) prints as a list; its messages read as words.
    return "; ".join(getattr(exc, "messages", None) or [str(exc)])
