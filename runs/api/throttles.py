"""The API's throttles: DRF's, keyed on the address benchlab/client_ip.py decides, never on
DRF's own reading of X-Forwarded-For (which believes whatever a client sends when
NUM_PROXIES is unset)."""

from typing import Any

from rest_framework import throttling

from benchlab.client_ip import client_ip


class ClientAddressIdent:
    def get_ident(self, request: Any) -> str:
        return client_ip(request) or ""


class UserRateThrottle(ClientAddressIdent, throttling.UserRateThrottle):
    pass


class ScopedRateThrottle(ClientAddressIdent, throttling.ScopedRateThrottle):
    pass
