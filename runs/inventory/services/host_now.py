"""The hosts as they are now ("Check the hosts now" on the campaign preview): each one's tuning and
activity read live over SSH (runs.lab.host.now) and kept in Host.facts["now"], which a full probe
(probe.py) also writes. Nothing else of the host changes: this is a reading, not an inventory
change, so an operator may ask for it and no audit event is written.

The hosts are read at once, a thread each, so the page waits about one reading's time (a
connection and a second between two samples) however many hosts the campaign has; a host that
does not answer within a page's connect timeout is named with the reason.
"""

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from django.core.exceptions import ValidationError
from django.db import transaction

from runs.inventory.services.connect import host_connected
from runs.lab.errors import LabError
from runs.lab.host.now import HostNow, host_now
from runs.models import Host

PAGE_CONNECT_TIMEOUT_S = 5.0  # the user waits for the page: a host that does not answer costs this much
MAX_THREADS = 8


def _read(host: Host) -> HostNow | str:
    """The host's reading, or why there is none (for the page)."""
    try:
        with host_connected(host, connect_timeout_s=PAGE_CONNECT_TIMEOUT_S) as connection:
            return host_now(connection)
    except (LabError, ValidationError, ValueError, OSError) as exc:  # also an inventory entry that cannot connect
        return str(exc) or type(exc).__name__


def hosts_read_now(*, host_ids: Sequence[int]) -> dict[str, str]:
    """Read every host now and keep each reading on it; {host name: why not} for those that
    could not be read (they keep what they had)."""
    found_hosts = Host.objects.in_bulk(host_ids)
    hosts = [found_hosts[pk] for pk in dict.fromkeys(host_ids) if pk in found_hosts]
    if not hosts:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(hosts), MAX_THREADS), thread_name_prefix="host-now") as pool:
        found = list(pool.map(_read, hosts))  # the threads touch no database: connections are per thread
    for host, reading in zip(hosts, found, strict=True):
        if isinstance(reading, HostNow):
            host_store_now(host=host, now=reading)
    return {host.name: reading for host, reading in zip(hosts, found, strict=True) if isinstance(reading, str)}


@transaction.atomic
def host_store_now(*, host: Host, now: HostNow) -> None:
    """Only the reading's key of Host.facts, under the row's lock: a probe storing the rest at the
    same moment is not overwritten with an old copy."""
    locked = Host.objects.select_for_update().only("facts").get(pk=host.pk)
    facts = dict(locked.facts or {})
    facts["now"] = now.as_json()
    Host.objects.filter(pk=host.pk).update(facts=facts)
    host.facts = facts
