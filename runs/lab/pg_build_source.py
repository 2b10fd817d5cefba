"""The SOURCE step of a build: the upstream tarball, checked, copied and unpacked on the host.

A Debian source comes from apt (`apt-get source --download-only`) into a source cache on the
host: apt checks the .dsc against its signed index, skips files already there with the right
hashes (so a host without network builds from a filled cache), and the upstream tarball is
checked against the .dsc. Only that upstream tarball is built: Debian's packaging patches move
socket directories and paths for the packaged layout, which a benchlab build does not use.

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
from runs.lab.pg_build_model import BuildFailed, BuildPaths, BuildStep
from runs.lab.pg_build_options import TARBALL_SUFFIXES, BuildSource, SourceKind, tarball_file
from runs.lab.probe import TRUSTED_PATH
from runs.lab.run_user import RUN_USER, run_as_run_user
from runs.lab.transport import Transport, clean_text

SOURCE_CACHE = "/var/cache/benchlab/pg-sources"  # per host: what apt fetched for builds
APT_TIMEOUT_S = 1800
UNPACK_TIMEOUT_S = 900
# The cache belongs to apt's unprivileged download user where there is one, so apt downloads
# sandboxed (as root it warns and downloads unsandboxed); apt moves finished files in as root.
_ENSURE_CACHE = 'install -d -m 0755 "$1" && { ! id -u _apt >/dev/null 2>&1 || chown _apt:root "$1"; }'
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


def installed_versions(transport: Transport, package: str) -> list[str]:
    """The versions of the Debian source package `package` whose binaries are installed."""
    listing = transport.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}|${source:Package}|${source:Version}\\n"], check=False
    ).stdout
    versions = set()
    for line in listing.splitlines():
        status, _, rest = line.partition("|")
        source, _, version = rest.partition("|")
        if status.startswith("ii") and source == package:
            versions.add(version)
    return sorted(versions)


def check_installed(transport: Transport, package: str, version: str) -> None:
    installed = installed_versions(transport, package)
    if version not in installed:
        found = ", ".join(installed) or "none"
        raise BuildFailed(
            BuildStep.SOURCE,
            f"{package} {version} is not installed on {transport.label} (installed versions of {package}: {found}); "
            "build from the Debian source of an installed version, or from a release tarball",
        )


def _apt_failure(transport: Transport, package: str, version: str, output: str, status: int) -> BuildFailed:
    command = f"apt-get source --download-only {package}={version}"
    if "deb-src" in output and "sources.list" in output:
        reason = (
            f"apt on {transport.label} has no deb-src entry: add a deb-src line for the same mirror and suites "
            "as its deb lines (scripts/install-system-packages adds one on benchlab's machine), then apt-get update"
        )
    elif "Unable to find a source package" in output or "Can not find version" in output:
        reason = (
            f"apt on {transport.label} knows no source of {package} {version}: run apt-get update there "
            "(after adding a deb-src line); the mirror may no longer carry that version"
        )
    elif "Failed to fetch" in output:
        reason = (
            f"apt on {transport.label} could not download the source of {package} {version} and it is not in "
            f"{SOURCE_CACHE}: give the host access to the mirror, or fill the cache (scripts/fetch-pg-source)"
        )
    else:
        reason = f"apt-get source on {transport.label} failed with exit status {status}"
    return BuildFailed(BuildStep.SOURCE, reason, command=command, exit_status=status, output=output)


def dsc_orig_tarball(dsc: str) -> tuple[str, str]:
    """(file name, SHA-256) of the upstream tarball a .dsc lists under Checksums-Sha256."""
    section = re.search(r"^Checksums-Sha256:[ \t]*\n((?:[ \t]+\S.*\n?)+)", dsc, re.MULTILINE)
    entries = [line.split() for line in section.group(1).splitlines()] if section else []
    origs = [(e[2], e[0].lower()) for e in entries if len(e) == 3 and _ORIG_TARBALL.fullmatch(e[2])]
    if len(origs) != 1 or not re.fullmatch(r"[0-9a-f]{64}", origs[0][1]):
        raise ValueError("the .dsc lists no single upstream tarball (.orig.tar.*) under Checksums-Sha256")
    return origs[0]


def fetch_debian_source(
    transport: Transport, package: str, version: str, on_line: Callable[[str], None]
) -> SourceTarball:
    """The upstream tarball of Debian's `package` `version` in the host's source cache, with the
    checksum its .dsc gives (apt has checked the .dsc against the signed Sources index)."""
    transport.run(["sh", "-c", _ENSURE_CACHE, "sh", SOURCE_CACHE])
    # One apt at a time in the cache: two builds on one host (or hosts sharing a disk) fetching
    # the same files would overwrite each other's partial downloads.
    argv = ["flock", "-w", "900", f"{SOURCE_CACHE}/.lock", "apt-get", "source", "--download-only", "-q"]
    lines: list[str] = []

    def collect(line: str) -> None:
        lines.append(clean_text(line))
        on_line(clean_text(line))

    fetched = transport.run(
        [*argv, f"{package}={version}"],
        cwd=SOURCE_CACHE,
        timeout=APT_TIMEOUT_S,
        check=False,
        on_stdout=collect,
        on_stderr=collect,
    )
    if fetched.exit_status != 0:
        raise _apt_failure(transport, package, version, "\n".join(lines), fetched.exit_status)
    dsc_path = f"{SOURCE_CACHE}/{package}_{version.partition(':')[2] or version}.dsc"
    # Read as the run user: the cache is apt's download user's to write.
    dsc = run_as_run_user(transport, ["cat", "--", dsc_path], check=False)
    if dsc.exit_status != 0:
        raise BuildFailed(BuildStep.SOURCE, f"apt-get source left no {dsc_path} on {transport.label}")
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
        tarball = fetch_debian_source(transport, source.package, source.package_version, on_line)
    else:
        tarball = SourceTarball(path=resolve_tarball(transport, source), expected_sha256=source.sha256)
    copy, sha256 = copy_checked(transport, tarball, paths)
    named = tarball.path if source.kind == SourceKind.DEBIAN else tarball_file(source)
    on_line(f"source: {named}, SHA-256 {sha256}" + (" (as expected)" if tarball.expected_sha256 else ""))
    unpack(transport, copy, paths)
    run_as_run_user(transport, ["rm", "-f", "--", copy])  # unpacked: 25 MB less on the host
    return sha256
