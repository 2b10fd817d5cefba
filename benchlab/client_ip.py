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
    if header:
        forwarded = request.headers.get(header, "").split(",")[-1].strip()
        try:
            return str(ipaddress.ip_address(forwarded))
        except ValueError:
            pass  # no usable header: the connection's own address
    return request.META.get("REMOTE_ADDR")
