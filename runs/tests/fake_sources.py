"""What hosts have to build PostgreSQL from, for tests that do not ask a real host: the DB,
page and API tests stand in for builds.services.sources.host_sources_read (conftest's
`fake_sources` fixture, on for every test not marked `lab`)."""

from runs.builds.services.sources import SourcesUnknown
from runs.lab.pgbuild.options import SourceKind
from runs.lab.pgbuild.sources import HostSource
from runs.models import Host

DEBIAN_15_20 = HostSource(SourceKind.DEBIAN, "15.20", "20" * 32, "postgresql-15_15.20.orig.tar.bz2", "postgresql-15",
                          "15.20-0+deb12u1")  # fmt: skip
DEBIAN_15_18 = HostSource(SourceKind.DEBIAN, "15.18", "18" * 32, "postgresql-15_15.18.orig.tar.bz2", "postgresql-15",
                          "15.18-0+deb12u1")  # fmt: skip
TARBALL_15_20 = HostSource(SourceKind.TARBALL, "15.20", "2a" * 32, "postgresql-15.20.tar.bz2")


class FakeHostSources:
    """host_sources_read's stand-in: every host has `sources`; with `problem` set, none can be
    asked. `asked` counts the calls (a refusal before anything is asked asks nothing)."""

    def __init__(self) -> None:
        self.sources = [DEBIAN_15_18, DEBIAN_15_20, TARBALL_15_20]
        self.problem = ""
        self.asked: list[str] = []

    def __call__(self, host: Host, **timeouts: float | None) -> list[HostSource]:
        self.asked.append(host.name)
        if self.problem:
            raise SourcesUnknown(f"could not ask {host.name} which PostgreSQL sources it has: {self.problem}")
        return list(self.sources)
