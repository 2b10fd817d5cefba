"""From an inventory Host to a live connection to it (the only place the two layers meet)."""

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from runs.common.ssh_keys import decrypt_private_key, parse_host_keys
from runs.jobs.host_reach import host_mark_reachable, host_mark_unreachable
from runs.lab.errors import HostNotAnswering
from runs.lab.transport.interface import Transport
from runs.lab.transport.local import LocalTransport
from runs.lab.transport.reconnect import ReconnectingTransport
from runs.lab.transport.ssh import SSHTarget, SSHTransport
from runs.models import Host


def host_ssh_target(host: Host) -> SSHTarget:
    return SSHTarget(
        address=host.address,
        port=host.ssh_port,
        user=host.ssh_user,
        host_keys=[key.line for key in parse_host_keys(host.host_keys)],
        private_key_path=host.private_key_path or None,
        private_key_text=decrypt_private_key(host.private_key_encrypted) if host.private_key_encrypted else None,
    )


def host_connect(host: Host, *, connect_timeout_s: float | None = None) -> Transport:
    """Open a connection to the host: SSH with its pinned keys, or local for this machine. A page
    that waits for the answer passes a short connect timeout."""
    if host.is_local:
        return LocalTransport(label=host.name)
    target = host_ssh_target(host)
    if connect_timeout_s is not None:
        target = dataclasses.replace(target, connect_timeout=connect_timeout_s)
    return SSHTransport(target)


@contextmanager
def host_connected(host: Host, *, connect_timeout_s: float | None = None) -> Iterator[Transport]:
    """A connection for one short piece of work (a cleanup, a listing, a signal), closed after it
    whatever happens. Failing to connect raises as host_connect does."""
    transport = host_connect(host, connect_timeout_s=connect_timeout_s)
    try:
        yield transport
    finally:
        transport.close()


def host_connect_for_run(host: Host) -> ReconnectingTransport:
    """A connection for a job's whole length (a run's, a build's, a fio baseline's): the first
    attempt fails at once (nothing has started): a host that does not answer raises HostAway,
    and its job waits (jobs.host_reach). A connection lost later is opened again for up to
    BENCHLAB_HOST_UNREACHABLE_S."""
    try:
        transport = ReconnectingTransport(lambda: host_connect(host), settings.BENCHLAB_HOST_UNREACHABLE_S)
    except HostNotAnswering as exc:
        raise host_mark_unreachable(host, str(exc)) from exc
    host_mark_reachable(host)
    return transport
