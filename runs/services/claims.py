"""Exactly one run at a time per host, across any number of workers on any number of machines.

A run claims all its hosts in one conditional UPDATE (only rows whose claim is empty) and
checks the row count: no locks held while the run runs, no race between two workers.
"""

from django.db import transaction

from runs.models import Host, Run


def run_claim_hosts(*, run: Run) -> bool:
    """Claim the run's server (and client) host; False, claiming nothing, if any is taken or disabled."""
    host_ids = {host.pk for host in run.hosts}
    with transaction.atomic():
        claimed = Host.objects.filter(pk__in=host_ids, claimed_by__isnull=True, enabled=True).update(claimed_by=run)
        if claimed != len(host_ids):
            transaction.set_rollback(True)
            return False
    return True


def run_release_hosts(*, run: Run) -> int:
    return Host.objects.filter(claimed_by=run).update(claimed_by=None)
