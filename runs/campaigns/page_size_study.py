"""Seed 001's page-size study as a preset: 2, 4 and 8 kB pages compared like with like.

Every page size is a benchlab build of ONE source (a Debian source or a release tarball the
host has, runs.lab.pgbuild.sources) with the SAME configure flags: the page size is then all that
differs. The packaged PostgreSQL is never one of them (its version and Debian's flags would be
mixed into the result). The user chooses the host and the source; the study's installs are the
builds of that source found on the host (by the build's prefix, which carries its exact key), and
the page sizes without one are what campaigns.services.after_builds builds before queueing the study.
"""

from dataclasses import dataclass, field, replace

from django.conf import settings

from runs.builds.services import sources as build_sources
from runs.builds.services.sources import SourcesUnknown
from runs.campaigns.preset_hosts import runnable_hosts
from runs.common.params import parse_choice
from runs.lab.pgbuild.options import BuildOptions, build_prefix
from runs.lab.pgbuild.sources import HostSource
from runs.models import Host, PgInstall
from runs.models.run_clients import version_key

PAGE_SIZES_STUDIED = (2048, 4096, 8192)  # seed 001
# One flag set for every page size: benchlab's defaults (upstream's: -O2, no assertions).
STUDY_FLAGS: tuple[str, ...] = ()


def study_options(source: HostSource, block_size: int) -> BuildOptions:
    """The build of `source` with `block_size` pages (bytes) and the study's flags."""
    return BuildOptions(
        version=source.version,
        source=source.build_source(settings.PG_TARBALL_DIR),
        block_size_kb=block_size // 1024,
        configure_flags=STUDY_FLAGS,
    )


def study_install(host: Host, options: BuildOptions) -> PgInstall | None:
    """The install of exactly this build on the host, if it is there (registered by its build or
    found by a probe: either way at the prefix that carries the build's key; not one the last
    probe found gone)."""
    installs = host.pg_installs.filter(
        bin_dir=f"{build_prefix(options)}/bin", removed_at__isnull=True, missing_since__isnull=True
    )
    return installs.filter(block_size=options.block_size_kb * 1024).first()


@dataclass(frozen=True)
class PageSizeStudy:
    """The study on one host from one source: its installs by page size, and what is missing."""

    host: Host
    source: HostSource | None
    installs: list[PgInstall] = field(default_factory=list)  # in page size order
    missing: list[int] = field(default_factory=list)  # bytes

    @property
    def missing_text(self) -> str:
        """ "2 kB, 4 kB and 8 kB" """
        words = [f"{size // 1024} kB" for size in self.missing]
        return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)

    @property
    def version(self) -> str | None:
        return self.source.version if self.source else None

    def options(self, block_size: int) -> BuildOptions:
        assert self.source is not None
        return study_options(self.source, block_size)


def study_installs(host: Host, template: BuildOptions) -> dict[int, PgInstall | None]:
    """Page size (bytes) -> the install of the build like `template` but for that page size."""
    return {size: study_install(host, replace(template, block_size_kb=size // 1024)) for size in PAGE_SIZES_STUDIED}


def page_size_study(host: Host, source: HostSource | None) -> PageSizeStudy:
    if source is None:
        return PageSizeStudy(host, None)
    found = study_installs(host, study_options(source, 8192))
    installs = [pg for pg in found.values() if pg is not None]
    return PageSizeStudy(host, source, installs, [size for size, pg in found.items() if pg is None])


@dataclass(frozen=True)
class PageSizeChoice:
    """What the preset's form offers and what was chosen: the host, its sources, one of them."""

    hosts: list[Host]
    host: Host | None
    sources: list[HostSource]
    study: PageSizeStudy | None
    problem: str = ""  # why no source is chosen, for the user to read


def default_source(host: Host, sources: list[HostSource]) -> HostSource | None:
    """The source with the most page sizes built already, then the newest release."""
    built = {s.key: len(page_size_study(host, s).installs) for s in sources}
    return max(sources, key=lambda s: (built[s.key], version_key(s.version)), default=None)


def page_size_choice(host: Host | None = None, source_key: str | None = None) -> PageSizeChoice:
    """The host (given, or the first the study may run on), the sources it has (asked over SSH)
    and the one chosen by key (or the default one when no key is given)."""
    hosts = runnable_hosts()
    host = host or (hosts[0] if hosts else None)
    if host is None:
        return PageSizeChoice(
            hosts, None, [], None, "no enabled host serves PostgreSQL: add one in the inventory first"
        )
    try:
        sources = build_sources.host_sources_read(host)  # by the module: tests replace it there
    except SourcesUnknown as exc:
        return PageSizeChoice(hosts, host, [], page_size_study(host, None), str(exc))
    if not sources:
        problem = (
            f"{host.name} has no PostgreSQL source to build from: put a release tarball in "
            f"{settings.PG_TARBALL_DIR} there, or fill its Debian source cache (scripts/fetch-pg-source)"
        )
        return PageSizeChoice(hosts, host, [], page_size_study(host, None), problem)
    if not source_key:
        return PageSizeChoice(hosts, host, sources, page_size_study(host, default_source(host, sources)))
    chosen = next((s for s in sources if s.key == source_key), None)
    if chosen is None:
        problem = f"{host.name} has no source {source_key[:200]!r}: choose one of {', '.join(s.key for s in sources)}"
        return PageSizeChoice(hosts, host, sources, page_size_study(host, None), problem)
    return PageSizeChoice(hosts, host, sources, page_size_study(host, chosen))


def chosen_host(raw: str | None) -> Host | None:
    """The host a request names (its id), one the study may run on; None when none is named.
    BadParameter for any other."""
    if not raw:
        return None
    hosts = {str(host.pk): host for host in runnable_hosts()}
    return hosts[parse_choice(raw, "host", hosts)]
