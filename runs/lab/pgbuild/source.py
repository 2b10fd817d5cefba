"""The SOURCE step of a build: the upstream tarball, checked, copied and unpacked on the host.

A Debian source is taken from the host's source cache as it stands, never through apt: the .dsc
and its upstream tarball must be there (scripts/fetch-pg-source, or `apt-get source
--download-only` in the cache, put them there; apt checked the .dsc against its signed index
then). The cache must be changeable by root and apt's download user only, so what apt checked
is what is built; the upstream tarball is checked against the .dsc's SHA-256. Any version in the
cache will do, installed or not: only that upstream tarball is built, since Debian's packaging
patches move socket directories and paths for the packaged layout, which a benchlab build does
not use. A version the cache lacks is refused before it is queued (builds.services.builds, through
runs.lab.pgbuild.sources); should it be gone by the time the build starts, this step says how to add it.

A release tarball is a file in the host's tarball directory (BuildSource.tarball_dir), named by
its file name only. Root resolves it there (symbolic links included) and refuses one that leads
outside, saying nothing of what it leads to; the directory and those above it must be root's to
change, so nobody else can swap a link between that check and the copy. The tarball is then
read, hashed and unpacked as the unprivileged run user, never as root, through the resolved
path: what the user cannot read fails.
"""

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from runs.lab.errors import LabError
from runs.lab.host.probe import TRUSTED_PATH
from runs.lab.host.run_user import RUN_USER, run_as_run_user
from runs.lab.pgbuild.model import BuildFailed, BuildPaths, BuildStep
from runs.lab.pgbuild.options import TARBALL_SUFFIXES, BuildSource, SourceKind, tarball_file
from runs.lab.transport.interface import Transport

SOURCE_CACHE = "/var/cache/benchlab/pg-sources"  # per host: what apt fetched for builds
UNPACK_TIMEOUT_S = 900
# As root: $1 the cache. "trusted" when it, and every directory above it, may be changed only by
# root or (the cache itself) apt's download user; exit 3 when there is no cache.
_CACHE_TRUSTED = (
    f"{TRUSTED_PATH}; "
    '[ -d "$1" ] || exit 3; a=$(id -u _apt 2>/dev/null || echo 0); '
    'trusted "$(dirname "$1")" && [ -n "$(find "$1" -maxdepth 0 \\( -user 0 -o -user "$a" \\) ! -perm /022)" ] '
    "&& echo trusted; true"
)
# How a user adds a Debian source to a host's cache: said wherever one is missing.
ADD_DEBIAN_SOURCE = (
    "add it with `apt-get source --download-only {package}={version}` run as root in {cache} on the host "
    "(scripts/fetch-pg-source does that for the installed versions), or build from a source the host has"
)
_ORIG_TARBALL = re.compile(r"[A-Za-z0-9.+~_-]+\.orig\.tar\.(?:gz|bz2|xz)")
# As root: $1 the tarball directory, $2 the file name. Prints the directory and the file, each
# resolved (the file's final link need not exist: "outside" says nothing of its target), or
# "untrusted" when someone other than root could change the directory or one above it.
_RESOLVE = (
    f"{TRUSTED_PATH}; "
    'd=$(realpath -e -- "$1") || exit 3; [ -d "$d" ] || exit 3; trusted "$d" || { echo untrusted; exit 0; }; '
    'f=$(realpath -m -- "$d/$2") || exit 4; printf "%s\n%s\n" "$d" "$f"'
)
# As root: $1 the directory; each file in it whose name is a tarball's and that is a regular file
# in it once links are resolved (one leading out is not listed, whether or not its target exists).
_LIST = (
    'd=$(realpath -e -- "$1") || exit 3; cd -- "$d" || exit 3; for f in *.tar.gz *.tar.bz2 *.tar.xz; do '
    'r=$(realpath -e -- "$f" 2>/dev/null) && [ "${r%/*}" = "$d" ] && [ -f "$r" ] && echo "$f"; done; true'
)


@dataclass(frozen=True)
class SourceTarball:
    path: str  # on the host
    expected_sha256: str  # "" when nothing says what it must be


def dsc_orig_tarball(dsc: str) -> tuple[str, str]:
    """(file name, SHA-256) of the upstream tarball a .dsc lists under Checksums-Sha256."""
    section = re.search(r"^Checksums-Sha256:[ \t]*\n((?:[ \t]+\S.*\n?)+)", dsc, re.MULTILINE)
    entries = [line.split() for line in section.group(1).splitlines()] if section else []
    origs = [(e[2], e[0].lower()) for e in entries if len(e) == 3 and _ORIG_TARBALL.fullmatch(e[2])]
    if len(origs) != 1 or not re.fullmatch(r"[0-9a-f]{64}", origs[0][1]):
        raise ValueError("the .dsc lists no single upstream tarball (.orig.tar.*) under Checksums-Sha256")
    return origs[0]


def cached_dsc_names(transport: Transport) -> list[str]:
    """The .dsc files in the host's source cache, sorted (what a refusal names)."""
    listed = transport.run(["find", SOURCE_CACHE, "-maxdepth", "1", "-name", "*.dsc", "-printf", "%f\\n"], check=False)
    return sorted(listed.stdout.split()) if listed.exit_status == 0 else []


def cached_debian_source(transport: Transport, package: str, version: str) -> SourceTarball:
    """The upstream tarball of Debian's `package` `version` in the host's source cache, with the
    checksum its .dsc gives; BuildFailed, saying how to add it, when the cache does not hold it."""
    add_one = ADD_DEBIAN_SOURCE.format(package=package, version=version, cache=SOURCE_CACHE)
    checked = transport.run(["sh", "-c", _CACHE_TRUSTED, "sh", SOURCE_CACHE], check=False)
    if checked.exit_status == 3:
        raise BuildFailed(BuildStep.SOURCE, f"there is no source cache {SOURCE_CACHE} on {transport.label}: {add_one}")
    if checked.stdout.strip() != "trusted":
        raise BuildFailed(
            BuildStep.SOURCE,
            f"the source cache {SOURCE_CACHE} on {transport.label} (or a directory above it) may be changed by "
            "someone other than root and apt: make it root's (or apt's _apt user's) and writable by nobody else",
        )
    dsc_path = f"{SOURCE_CACHE}/{package}_{version.partition(':')[2] or version}.dsc"
    # Read as the run user, like the tarball: a file it may not read is not built.
    dsc = run_as_run_user(transport, ["cat", "--", dsc_path], check=False)
    if dsc.exit_status != 0:
        there = ", ".join(cached_dsc_names(transport)) or "none"
        raise BuildFailed(
            BuildStep.SOURCE,
            f"the Debian source of {package} {version} is not in {SOURCE_CACHE} on {transport.label} "
            f"(.dsc files there: {there}): {add_one}",
        )
    try:
        name, sha256 = dsc_orig_tarball(dsc.stdout)
    except ValueError as exc:
        raise BuildFailed(BuildStep.SOURCE, f"{dsc_path}: {exc}", output=dsc.stdout) from exc
    return SourceTarball(path=f"{SOURCE_CACHE}/{name}", expected_sha256=sha256)


def host_tarballs(transport: Transport, directory: str) -> list[str]:
    """The names of the release tarballs in `directory` on the host, sorted: what a build may name."""
    listed = transport.run(["sh", "-c", _LIST, "sh", directory], check=False)
    return sorted(listed.stdout.split()) if listed.exit_status == 0 else []


def _tarballs_there(transport: Transport, directory: str) -> str:
    names = host_tarballs(transport, directory)
    return f"tarballs there: {', '.join(names[:20])}" if names else "there are none"


def resolve_tarball(transport: Transport, source: BuildSource) -> str:
    """The tarball's path on the host with every link resolved, checked by root to be inside its
    directory; BuildFailed otherwise, naming only what the build was asked for."""
    directory, name = source.tarball_dir, source.tarball_path
    found = transport.run(["sh", "-c", _RESOLVE, "sh", directory, name], check=False)
    lines = found.stdout.splitlines()
    if found.exit_status == 3:
        raise BuildFailed(
            BuildStep.SOURCE,
            f"there is no tarball directory {directory} on {transport.label}: "
            "builds take release tarballs from it (an admin creates it, root's, and puts tarballs there)",
        )
    if lines == ["untrusted"]:
        raise BuildFailed(
            BuildStep.SOURCE,
            f"the tarball directory {directory} on {transport.label} (or a directory above it) may be changed by "
            "someone other than root: make it root's and writable by nobody else",
        )
    if found.exit_status != 0 or len(lines) != 2:
        raise BuildFailed(BuildStep.SOURCE, f"cannot resolve tarball {name} in {directory} on {transport.label}")
    real_dir, real_file = lines
    if real_dir == "/" or posixpath.dirname(real_file) != real_dir:  # elsewhere, or in a directory below
        raise BuildFailed(
            BuildStep.SOURCE,
            f"tarball {name} in {directory} on {transport.label} leads outside that directory (a symbolic link?): "
            f"builds take only tarballs that are in it; {_tarballs_there(transport, directory)}",
        )
    if run_as_run_user(transport, ["test", "-f", real_file, "-a", "-r", real_file], check=False).exit_status != 0:
        raise BuildFailed(
            BuildStep.SOURCE,
            f"there is no tarball {name} in {directory} on {transport.label} that {RUN_USER} may read "
            f"(builds read their source as that user: give it mode 0644); {_tarballs_there(transport, directory)}",
        )
    return real_file


def copy_checked(transport: Transport, tarball: SourceTarball, paths: BuildPaths) -> tuple[str, str]:
    """Copy the tarball into the work dir as the run user and hash the copy (what gets built):
    (the copy's path, its SHA-256). A copy that does not match the expected checksum fails."""
    readable = run_as_run_user(transport, ["test", "-f", tarball.path, "-a", "-r", tarball.path], check=False)
    if readable.exit_status != 0:
        raise BuildFailed(
            BuildStep.SOURCE,
            f"source tarball {tarball.path}: no such file on {transport.label}, or {RUN_USER} may not read it "
            "(builds read their source as that user: give it mode 0644)",
        )
    suffix = next((s for s in TARBALL_SUFFIXES if tarball.path.endswith(s)), ".tar.gz")
    copy = paths.tarball(suffix)
    run_as_run_user(transport, ["cp", "--", tarball.path, copy], timeout=UNPACK_TIMEOUT_S)
    found = run_as_run_user(transport, ["sha256sum", "--", copy], timeout=UNPACK_TIMEOUT_S).stdout.split()
    sha256 = found[0].lower() if found else ""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise BuildFailed(BuildStep.SOURCE, f"sha256sum of {copy} on {transport.label} said {' '.join(found)[:100]!r}")
    if tarball.expected_sha256 and sha256 != tarball.expected_sha256.lower():
        raise BuildFailed(
            BuildStep.SOURCE,
            f"source tarball {tarball.path}: its SHA-256 is {sha256}, "
            f"not the expected {tarball.expected_sha256.lower()}",
        )
    return copy, sha256


def unpack(transport: Transport, tarball: str, paths: BuildPaths) -> None:
    """The tarball's top directory becomes src/ (tar strips absolute names and '..' by itself)."""
    run_as_run_user(transport, ["mkdir", "-m", "0700", "--", paths.src_dir])
    argv = ["tar", "-xf", tarball, "-C", paths.src_dir, "--strip-components=1"]
    try:
        run_as_run_user(transport, argv, timeout=UNPACK_TIMEOUT_S)
    except LabError as exc:
        raise BuildFailed(BuildStep.SOURCE, f"cannot unpack {tarball}: {str(exc).splitlines()[-1][:200]}") from exc
    if run_as_run_user(transport, ["test", "-x", f"{paths.src_dir}/configure"], check=False).exit_status != 0:
        raise BuildFailed(BuildStep.SOURCE, "the tarball holds no PostgreSQL source tree (no configure at its top)")


def obtain_source(transport: Transport, source: BuildSource, paths: BuildPaths, on_line: Callable[[str], None]) -> str:
    """The whole step: the source tarball checked, copied into the work dir and unpacked into
    src/; returns the SHA-256 of what is built."""
    if source.kind == SourceKind.DEBIAN:
        tarball = cached_debian_source(transport, source.package, source.package_version)
    else:
        tarball = SourceTarball(path=resolve_tarball(transport, source), expected_sha256=source.sha256)
    copy, sha256 = copy_checked(transport, tarball, paths)
    named = tarball.path if source.kind == SourceKind.DEBIAN else tarball_file(source)
    on_line(f"source: {named}, SHA-256 {sha256}" + (" (as expected)" if tarball.expected_sha256 else ""))
    unpack(transport, copy, paths)
    run_as_run_user(transport, ["rm", "-f", "--", copy])  # unpacked: 25 MB less on the host
    return sha256
