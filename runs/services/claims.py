"""Exactly one run at a time per host, across any number of workers on any number of machines.

A run claims all its hosts in one conditional UPDATE (only rows whose claim is empty) and
checks the row count: no locks held while the run runs, no race between two workers.
"""

from django.db import transaction
from django.db.models import Q

from runs.models import Host, Run


def run_claim_hosts(*, run: Run) -> bool:
    """Claim the run's server (and client) host; False, claiming nothing, if any is taken or disabled.

    Hosts this run holds already count as free: a worker that died between claiming and
    starting left them so, and the task's second delivery must be able to go on."""
    host_ids = {host.pk for host in run.hosts}
    with transaction.atomic():
        free = Q(claimed_by__isnull=True) | Q(claimed_by=run)
        claimed = Host.objects.filter(free, pk__in=host_ids, enabled=True).update(claimed_by=run)
        if claimed != len(host_ids):
            transaction.set_rollback(True)
            return False
    return True


def run_release_hosts(*, run: Run) -> int:
    return Host.objects.filter(claimed_by=run).update(claimed_by=None)
