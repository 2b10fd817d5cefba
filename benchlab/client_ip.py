"""The address a request came from: the one place that decides it, for login lockouts (axes),
the audit log and the API's throttles.

The connection's address is the client's, unless the connection comes from a proxy named in
BENCHLAB_TRUSTED_PROXIES (none by default). Only then is the proxy's header read
(BENCHLAB_CLIENT_IP_HEADER, X-Forwarded-For unless set): each proxy appends the address it saw,
so the header is read from the right, past the entries the trusted proxies wrote, and the first
address no trusted proxy has is the client. Entries to its left were written by the client and
are never believed. uvicorn runs without its own proxy-header handling (scripts/web), so the
connection's address reaches Django unchanged.
"""

import ipaddress

from django.conf import settings
from django.http import HttpRequest

from benchlab.env import IPNetwork


def client_ip(request: HttpRequest) -> str | None:
    peer = _address(request.META.get("REMOTE_ADDR", ""))
    if peer is None or not _is_trusted_proxy(peer):
        return peer
    return _client_named_by_proxies(request.headers.get(settings.CLIENT_IP_HEADER, ""), peer)


def _client_named_by_proxies(header: str, peer: str) -> str:
    """The right-most address in `header` that no trusted proxy has; `peer` (the nearest proxy)
    when the header is missing, or when what a trusted proxy wrote is no address."""
    believed = peer
    for entry in reversed(header.split(",")):
        address = _address(entry)
        if address is None:
            return believed  # not what a proxy writes: nothing further left can be believed
        believed = address
        if not _is_trusted_proxy(address):
            break
    return believed


def _is_trusted_proxy(address: str) -> bool:
    trusted: tuple[IPNetwork, ...] = settings.TRUSTED_PROXIES
    ip = ipaddress.ip_address(address)
    return any(ip in network for network in trusted)


def _address(text: str) -> str | None:
    """An address as PostgreSQL's inet type takes it (no IPv6 zone such as %eth0), or None."""
    try:
        return str(ipaddress.ip_address(text.strip().split("%", 1)[0]))
    except ValueError:
        return None
