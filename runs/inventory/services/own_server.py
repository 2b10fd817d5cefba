"""Runs on benchlab's own server: before one starts there, benchlab's database and Redis must
refuse the run user (runs/lab/host/own_services.py says why and asks them)."""

from collections.abc import Iterable
from urllib.parse import urlsplit

from django.conf import settings

from runs.lab.host.own_services import POSTGRESQL, REDIS, ServiceAddress, assert_services_refuse_run_user
from runs.lab.transport.interface import Transport
from runs.models import Host
from runs.models.inventory import is_loopback

PG_SOCKET_DIR = "/var/run/postgresql"  # Debian's; where a local client looks first


def benchlab_service_addresses() -> list[ServiceAddress]:
    """Every way benchlab's settings reach its PostgreSQL and Redis, and the local socket beside
    a loopback PostgreSQL (its pg_hba `local` lines are separate from its `host` lines). For
    PostgreSQL both benchlab's role and the superuser are asked for."""
    return [*_postgresql_addresses(settings.DATABASES["default"]), *_redis_addresses(settings.REDIS_URL)]


def own_server_assert_closed(connections: Iterable[tuple[Host, Transport]]) -> None:
    """Raise LabError naming the fix if a run would put the run user on benchlab's own server
    while benchlab's services let it in. Every host of the run is looked at; only benchlab's
    own server is asked."""
    addresses = None
    for host, transport in connections:
        if host.is_benchlab_server:
            addresses = addresses or benchlab_service_addresses()
            assert_services_refuse_run_user(transport, addresses)


def _postgresql_addresses(database: dict[str, object]) -> list[ServiceAddress]:
    host, port = str(database.get("HOST") or ""), int(str(database.get("PORT") or 5432))
    places: list[dict[str, object]] = []
    if host.startswith("/"):
        places.append({"socket": f"{host}/.s.PGSQL.{port}"})
    elif host:
        places.append({"host": host, "port": port})
    if not host or is_loopback(host):
        places.append({"socket": f"{PG_SOCKET_DIR}/.s.PGSQL.{port}"})
    roles = dict.fromkeys([(str(database["USER"]), str(database["NAME"])), ("postgres", "postgres")])
    return [
        ServiceAddress(kind=POSTGRESQL, user=user, database=name, **place)  # type: ignore[arg-type]
        for place in places
        for user, name in roles
    ]


def _redis_addresses(url: str) -> list[ServiceAddress]:
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return [ServiceAddress(kind=REDIS, socket=parts.path)]
    return [ServiceAddress(kind=REDIS, host=parts.hostname or "127.0.0.1", port=parts.port or 6379)]
