"""What a host can build PostgreSQL from, as it stands: the Debian sources in its source cache
(each .dsc whose upstream tarball is there with the .dsc's SHA-256) and the release tarballs in
its tarball directory (with their SHA-256, computed there). The Build form, the API and the
page-size study offer these and nothing else: a build never guesses a source it cannot have.

One SSH round trip, as root (the cache is apt's and root's; the tarball directory is root's):
the .dsc texts, the cache's upstream tarballs' checksums, and each tarball that is a regular
file in the tarball directory once links are resolved, with its checksum.
"""

import re
from dataclasses import dataclass

from runs.lab.pgbuild.options import BuildSource, SourceKind, debian_upstream_version
from runs.lab.pgbuild.source import SOURCE_CACHE, dsc_orig_tarball
from runs.lab.transport.interface import Transport

LIST_TIMEOUT_S = 120  # hashing a few 25 MB tarballs
# $1 the source cache, $2 the tarball directory. Records start with "@" (no .dsc line does).
_LIST = r"""
c=$1; t=$2
if [ -d "$c" ]; then
  for d in "$c"/*.dsc; do [ -f "$d" ] || continue; printf '@dsc %s\n' "${d##*/}"; cat -- "$d"; echo; done
  for f in "$c"/*.orig.tar.gz "$c"/*.orig.tar.bz2 "$c"/*.orig.tar.xz; do
    [ -f "$f" ] && printf '@orig %s\n' "$(sha256sum -- "$f" | cut -d' ' -f1) ${f##*/}"
  done
fi
if d=$(realpath -e -- "$t" 2>/dev/null) && [ -d "$d" ]; then
  for f in "$d"/*.tar.gz "$d"/*.tar.bz2 "$d"/*.tar.xz; do
    r=$(realpath -e -- "$f" 2>/dev/null) && [ "${r%/*}" = "$d" ] && [ -f "$r" ] || continue
    printf '@tarball %s\n' "$(sha256sum -- "$r" | cut -d' ' -f1) ${f##*/}"
  done
fi
true
"""
_RELEASE_VERSION = r"[1-9][0-9]?(?:\.[0-9]{1,2}|(?:beta|rc)[1-9])"  # 15.18, 17beta1
_RELEASE_TARBALL = re.compile(rf"postgresql-(?P<version>{_RELEASE_VERSION})\.tar\.(?:gz|bz2|xz)")
_FIELD = re.compile(r"^(?P<name>Source|Version):[ \t]*(?P<value>\S+)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class HostSource:
    """A source a build may name: Debian's (package and version, its upstream tarball in the
    cache) or a release tarball in the tarball directory."""

    kind: SourceKind
    version: str  # upstream, e.g. "15.18"
    sha256: str  # of the upstream tarball, as found on the host
    file_name: str  # the upstream tarball's name, in the cache or the tarball directory
    package: str = ""  # DEBIAN: e.g. "postgresql-15"
    package_version: str = ""  # DEBIAN: e.g. "15.18-0+deb12u1"

    @property
    def key(self) -> str:
        """Names the source in a form or an API call: "debian:postgresql-15=15.18-0+deb12u1" or
        "tarball:postgresql-15.18.tar.bz2"."""
        if self.kind == SourceKind.DEBIAN:
            return f"debian:{self.package}={self.package_version}"
        return f"tarball:{self.file_name}"

    @property
    def label(self) -> str:
        if self.kind == SourceKind.DEBIAN:
            return f"PostgreSQL {self.version}: Debian source {self.package} {self.package_version} (cached)"
        return f"PostgreSQL {self.version}: release tarball {self.file_name}"

    def build_source(self, tarball_dir: str) -> BuildSource:
        """The build's source, pinned to the checksum found here: a tarball swapped before the
        build is refused at its SOURCE step."""
        if self.kind == SourceKind.DEBIAN:
            return BuildSource(SourceKind.DEBIAN, package=self.package, package_version=self.package_version)
        return BuildSource(SourceKind.TARBALL, tarball_path=self.file_name, sha256=self.sha256, tarball_dir=tarball_dir)


def _records(output: str) -> list[tuple[str, str, list[str]]]:
    """(kind, argument, following lines) for each "@kind argument" line."""
    records: list[tuple[str, str, list[str]]] = []
    for line in output.splitlines():
        if line.startswith("@"):
            kind, _, argument = line[1:].partition(" ")
            records.append((kind, argument, []))
        elif records:
            records[-1][2].append(line)
    return records


def _debian_source(dsc: str, origs: dict[str, str]) -> HostSource | None:
    """The source a .dsc describes, if its upstream tarball is in the cache with its checksum."""
    fields = {m["name"]: m["value"] for m in _FIELD.finditer(dsc)}
    package, package_version = fields.get("Source", ""), fields.get("Version", "")
    upstream = debian_upstream_version(package_version)
    try:
        name, sha256 = dsc_orig_tarball(dsc)
    except ValueError:
        return None
    if not package.startswith("postgresql-") or upstream is None or origs.get(name) != sha256:
        return None  # not PostgreSQL, or incomplete: apt has not (fully) fetched it
    return HostSource(SourceKind.DEBIAN, upstream, sha256, name, package, package_version)


def parse_sources(output: str) -> list[HostSource]:
    records = _records(output)
    origs = {name: sha for kind, arg, _ in records if kind == "orig" for sha, _, name in [arg.partition(" ")]}
    found = []
    for kind, argument, lines in records:
        if kind == "dsc" and (source := _debian_source("\n".join(lines) + "\n", origs)):
            found.append(source)
        elif kind == "tarball":
            sha256, _, name = argument.partition(" ")
            if release := _RELEASE_TARBALL.fullmatch(name):
                found.append(HostSource(SourceKind.TARBALL, release["version"], sha256, name))
    return sorted(set(found), key=lambda s: (s.kind, s.version, s.key))


def host_sources(transport: Transport, tarball_dir: str, *, timeout_s: float = LIST_TIMEOUT_S) -> list[HostSource]:
    """Every source a build on this host may start from now (see the module's docstring)."""
    listed = transport.run(["sh", "-c", _LIST, "sh", SOURCE_CACHE, tarball_dir], timeout=timeout_s)
    return parse_sources(listed.stdout)
