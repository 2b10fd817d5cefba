"""The sources a host can build PostgreSQL from, asked of the host itself (runs.lab.pg_sources):
what the Build form, the API and the page-size study offer, and what a build is checked against
before it is queued."""

from django.conf import settings

from runs.lab.errors import LabError
from runs.lab.pg_sources import HostSource, host_sources
from runs.models import Host
from runs.services.lab_access import host_connect


class SourcesUnknown(Exception):
    """The host could not be asked; str() says why, for the user to read."""


def host_sources_read(host: Host) -> list[HostSource]:
    """What `host` has now: Debian sources in its cache, release tarballs in its tarball directory."""
    try:
        connection = host_connect(host)
        try:
            return host_sources(connection, settings.PG_TARBALL_DIR)
        finally:
            connection.close()
    except LabError as exc:
        raise SourcesUnknown(f"could not ask {host.name} which PostgreSQL sources it has: {exc}") from exc
