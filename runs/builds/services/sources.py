"""The sources a host can build PostgreSQL from, asked of the host itself (runs.lab.pgbuild.sources):
what the Build form, the API and the page-size study offer, and what a build is checked against
before it is queued.

Asked live, not recorded: the listing is one SSH round trip (the cache's .dsc files and a
SHA-256 of each tarball, well under a second for a few 25 MB tarballs), and a recorded one would
be wrong the moment an admin runs scripts/fetch-pg-source or copies a tarball in, which is just
when a user comes to build from it. A page asks with a short connect timeout, so a host that does
not answer costs the form a few seconds and a sentence saying why, never a hang. The build's
SOURCE step checks the file again on the host (the checksum found here is pinned to the build).
"""

from collections.abc import Sequence

from django.conf import settings

from runs.inventory.services.connect import host_connected
from runs.lab.errors import LabError
from runs.lab.pgbuild.options import BuildOptions, SourceKind
from runs.lab.pgbuild.source import ADD_DEBIAN_SOURCE, SOURCE_CACHE
from runs.lab.pgbuild.sources import LIST_TIMEOUT_S, HostSource, host_sources
from runs.models import Host

PAGE_CONNECT_TIMEOUT_S = 5.0  # a page or an API call waits this long for a host that does not answer
PAGE_LIST_TIMEOUT_S = 30.0  # and this long for the listing itself (hashing the tarballs)


class SourcesUnknown(Exception):
    """The host could not be asked; str() says why, for the user to read."""


def host_sources_read(
    host: Host, *, connect_timeout_s: float | None = None, timeout_s: float = LIST_TIMEOUT_S
) -> list[HostSource]:
    """What `host` has now: Debian sources in its cache, release tarballs in its tarball directory.
    A page passes short timeouts (PAGE_*): the user waits for the answer."""
    try:
        with host_connected(host, connect_timeout_s=connect_timeout_s) as connection:
            return host_sources(connection, settings.PG_TARBALL_DIR, timeout_s=timeout_s)
    except LabError as exc:
        raise SourcesUnknown(f"could not ask {host.name} which PostgreSQL sources it has: {exc}") from exc


def host_sources_for_page(host: Host) -> list[HostSource]:
    """host_sources_read with a page's timeouts."""
    return host_sources_read(host, connect_timeout_s=PAGE_CONNECT_TIMEOUT_S, timeout_s=PAGE_LIST_TIMEOUT_S)


def sources_text(host: Host, sources: Sequence[HostSource]) -> str:
    """What the host has, in a sentence a refusal ends with."""
    if not sources:
        return (
            f"{host.name} has no PostgreSQL source: neither a complete Debian source in {SOURCE_CACHE} nor a "
            f"release tarball (postgresql-<version>.tar.gz, .bz2 or .xz) in {settings.PG_TARBALL_DIR}"
        )
    return f"{host.name} has: " + "; ".join(source.label for source in sources)


def source_found(options: BuildOptions, sources: Sequence[HostSource]) -> HostSource | None:
    """The host's source the options name (Debian package and version, or tarball file name)."""
    asked = options.source
    for source in sources:
        if source.kind != asked.kind:
            continue
        if asked.kind == SourceKind.DEBIAN and (source.package, source.package_version) == (
            asked.package,
            asked.package_version,
        ):
            return source
        if asked.kind == SourceKind.TARBALL and source.file_name == asked.tarball_path:
            return source
    return None


def source_refusal(host: Host, options: BuildOptions, sources: Sequence[HostSource]) -> str | None:
    """Why the options' source cannot be had on `host` (with the fix), or None."""
    asked, have = options.source, sources_text(host, sources)
    found = source_found(options, sources)
    if found is None and asked.kind == SourceKind.DEBIAN:
        add = ADD_DEBIAN_SOURCE.format(package=asked.package, version=asked.package_version, cache=SOURCE_CACHE)
        return (
            f"{host.name} has no complete Debian source of {asked.package} {asked.package_version} in {SOURCE_CACHE} "
            f"(its .dsc and upstream tarball): {add}. {have}."
        )
    if found is None:
        return (
            f"{host.name} has no release tarball {asked.tarball_path} in {settings.PG_TARBALL_DIR}: an admin copies "
            f"it there (root's, mode 0644), or build from a source the host has. {have}."
        )
    if asked.kind == SourceKind.TARBALL and asked.sha256 and asked.sha256.lower() != found.sha256:
        return (
            f"{asked.tarball_path} on {host.name} has SHA-256 {found.sha256}, not the {asked.sha256.lower()} given: "
            "it is not the release you meant (compare it with the checksum published with the release)"
        )
    if found.version != options.version:
        return f"{found.label} is PostgreSQL {found.version}, not {options.version}: ask for {found.version}"
    return None
