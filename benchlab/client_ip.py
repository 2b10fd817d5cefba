"""The address a request came from, for login throttling and the audit log.

Behind a reverse proxy every request arrives from the proxy; the proxy names the client in a
header (BENCHLAB_CLIENT_IP_HEADER, e.g. X-Real-IP or X-Forwarded-For). Only the proxy's own
entry is believed: the last one in X-Forwarded-For, which a client cannot forge.
"""

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    header = settings.CLIENT_IP_HEADER
    if header and (forwarded := _address(request.headers.get(header, "").split(",")[-1])):
        return forwarded
    return _address(request.META.get("REMOTE_ADDR", ""))


def _address(text: str) -> str | None:
    """An address as PostgreSQL's inet type takes it (no IPv6 zone such as %eth0), or None."""
    try:
        return str(ipaddress.ip_address(text.strip().split("%", 1)[0]))
    except ValueError:
        return None
