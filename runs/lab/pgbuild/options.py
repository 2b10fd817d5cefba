"""What a PostgreSQL build is: its source, page sizes and configure flags — checked, keyed, named.

Pure: no I/O, no Django. Forms, the API and the services validate through
`build_option_errors`; the lab layer (pg_build.py) turns valid options into configure's
arguments. Nothing a user types reaches a shell except as one quoted argument, and every
value is checked against a strict pattern first.

A build is cached on its host under an exact key (`build_key`): the canonical options plus
RECIPE_VERSION, which is bumped whenever the recipe (pg_build*.py) changes what it produces.
"""

import hashlib
import json
import posixpath
import re
from dataclasses import dataclass
from enum import StrEnum

from runs.lab.errors import InvalidOption

BLOCK_SIZES_KB = (1, 2, 4, 8, 16, 32)  # configure --with-blocksize accepts these
WAL_BLOCK_SIZES_KB = (1, 2, 4, 8, 16, 32, 64)  # --with-wal-blocksize
SEGMENT_SIZES_GB = (1, 2, 4, 8, 16, 32, 64)  # --with-segsize (relation segment size, GB)

# The flags a build may add, and what each does. Upstream's defaults are what a benchmark
# wants: -O2, no assertions, no debug overhead (--enable-debug only adds symbols), no JIT
# (--with-llvm is left out: it needs LLVM and clang on the host and makes plans differ).
CONFIGURE_FLAGS: dict[str, str] = {
    "--enable-debug": "compile with debugging symbols (-g); the code runs as fast as without them",
    "--enable-cassert": (
        "assertion checks in the server: finds bugs, but makes PostgreSQL several times slower — "
        "never for a benchmark whose numbers are compared with another build's"
    ),
    "--with-icu": "ICU collations (needs libicu-dev; PostgreSQL 16 and later have them by default)",
    "--without-icu": "no ICU collations (PostgreSQL 16 and later build with ICU unless told not to)",
    "--without-readline": "psql without line editing (no libreadline-dev needed)",
    "--without-zlib": "no zlib: pg_dump's compressed formats and pgbench are unaffected otherwise",
    "--with-lz4": "LZ4 compression for TOAST and WAL (needs liblz4-dev; PostgreSQL 14 and later)",
    "--with-zstd": "Zstandard compression for WAL and base backups (needs libzstd-dev; PostgreSQL 15 and later)",
    "--with-openssl": "SSL connections (needs libssl-dev)",
}
CONFLICTING_FLAGS = (("--with-icu", "--without-icu"),)
FLAG_SINCE_MAJOR = {"--with-icu": 10, "--without-icu": 10, "--with-lz4": 14, "--with-zstd": 15}

BUILDS_ROOT = "/var/lib/benchlab/builds"  # every build's prefix and work dir lives under it, on the host
# Where a build from a release tarball takes it from, on the host (settings.PG_TARBALL_DIR): a
# build names a file in it, never a path, so no build reads, hashes or reports any other file.
DEFAULT_TARBALL_DIR = "/var/cache/benchlab/pg-tarballs"
MANIFEST_NAME = "benchlab-build.json"  # in a build's prefix: what it is (find_build reads it)
# Bumped whenever the build recipe changes what it produces: older builds are then not reused.
RECIPE_VERSION = 1
TARBALL_SUFFIXES = (".tar.gz", ".tar.bz2", ".tar.xz")
OLDEST_MAJOR = 10  # X.Y versions, pgbench in src/bin: what the recipe and its verification know

# "15.20", "17.0"; pre-releases as upstream names them ("17beta1", "16rc1").
_VERSION = re.compile(r"(?P<major>[1-9][0-9]?)(?:\.(?P<minor>[0-9]{1,2})|(?P<pre>beta|rc)[1-9])")
_OLD_VERSION = re.compile(r"[6-9]\.[0-9]\.[0-9]{1,2}")  # 9.6.24: before the X.Y scheme
# Debian policy: [epoch:]upstream[-revision], the revision after the last hyphen.
_DEBIAN_VERSION = re.compile(r"(?:[0-9]{1,5}:)?[0-9][A-Za-z0-9.+~-]*")
_DEBIAN_REVISION = re.compile(r"[A-Za-z0-9.+~]+")
_PACKAGE = re.compile(r"postgresql-(?P<major>[1-9][0-9])")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_PATH_CHARACTERS = re.compile(r"[A-Za-z0-9._+~@%=,:/-]+")
_TARBALL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,254}")  # a file name: no '/', no leading '.'


_FIELD_NAMES = {"tarball_path": "tarball", "sha256": "sha256"}


class SourceKind(StrEnum):
    DEBIAN = "debian"  # Debian's source package of a version in the host's source cache
    TARBALL = "tarball"  # an upstream release tarball in the host's tarball directory


@dataclass(frozen=True)
class BuildSource:
    kind: SourceKind
    package: str = ""  # DEBIAN: the source package, e.g. "postgresql-15"
    package_version: str = ""  # DEBIAN: e.g. "15.18-0+deb12u1", its source in the host's cache
    tarball_path: str = ""  # TARBALL: the file name of a .tar.gz/.tar.bz2/.tar.xz in tarball_dir
    sha256: str = ""  # TARBALL: the published SHA-256 (64 hex), optional; verified when given
    tarball_dir: str = DEFAULT_TARBALL_DIR  # TARBALL: the directory it is in on the host (a setting)


@dataclass(frozen=True)
class BuildOptions:
    version: str  # upstream PostgreSQL version, e.g. "15.20"
    source: BuildSource
    block_size_kb: int = 8
    wal_block_size_kb: int = 8
    segment_size_gb: int = 1
    configure_flags: tuple[str, ...] = ()  # sorted, unique, each a key of CONFIGURE_FLAGS


def _choices(values: tuple[int, ...], unit: str) -> str:
    words = [str(v) for v in values]
    return f"{', '.join(words[:-1])} or {words[-1]} {unit}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def major_version(version: str) -> int | None:
    """15 for "15.20" or "15beta2"; None for a version benchlab does not build."""
    found = _VERSION.fullmatch(version) if isinstance(version, str) else None
    return int(found.group("major")) if found else None


def debian_upstream_version(package_version: str) -> str | None:
    """The upstream release a Debian version packages ("15.20-0+deb12u1" -> "15.20",
    "17~beta1-1" -> "17beta1"), or None if it is not a Debian version."""
    if not isinstance(package_version, str) or len(package_version) > 100:
        return None
    if not _DEBIAN_VERSION.fullmatch(package_version):
        return None
    rest = package_version.partition(":")[2] if ":" in package_version else package_version
    upstream, hyphen, revision = rest.rpartition("-")
    if not hyphen:  # no revision: a native package, whose version has no hyphen at all
        upstream = rest
    elif not _DEBIAN_REVISION.fullmatch(revision) or not upstream:
        return None
    return upstream.replace("~", "")


def _version_error(version: object) -> str | None:
    major = major_version(version) if isinstance(version, str) else None
    if major is None and isinstance(version, str) and _OLD_VERSION.fullmatch(version):
        major = int(version[0])
    if major is None:
        return (
            f"version {str(version)[:40]!r}: give PostgreSQL's version as it names its release, "
            "e.g. 15.20, 17.2 or 17beta1"
        )
    if major < OLDEST_MAJOR:
        return f"version {version}: benchlab builds PostgreSQL {OLDEST_MAJOR} or later"
    return None


def _debian_errors(options: BuildOptions, errors: dict[str, str]) -> None:
    source = options.source
    major = major_version(options.version)
    found = _PACKAGE.fullmatch(source.package) if isinstance(source.package, str) else None
    if not found:
        example = f"postgresql-{major}" if major else "postgresql-15"
        errors["package"] = f"package {str(source.package)[:60]!r}: give a Debian source package such as {example}"
    elif major is not None and int(found.group("major")) != major:
        errors["package"] = (
            f"package {source.package}: PostgreSQL {options.version}'s source package is postgresql-{major}"
        )
    upstream = debian_upstream_version(source.package_version)
    if upstream is None:
        errors["package_version"] = (
            f"package version {str(source.package_version)[:60]!r}: give the Debian version of a source in the "
            "host's source cache, e.g. 15.18-0+deb12u1"
        )
    elif "version" not in errors and upstream != options.version:
        errors["package_version"] = (
            f"package version {source.package_version} is PostgreSQL {upstream}, not {options.version}: "
            "give the version the package holds"
        )
    for field, value in (("tarball_path", source.tarball_path), ("sha256", source.sha256)):
        if value:
            errors[field] = (
                f"{_FIELD_NAMES[field]}: only for a tarball source; a Debian source is checked against its .dsc"
            )


def tarball_dir_problem(directory: object) -> str | None:
    """What is wrong with a tarball directory (the setting), or None: an absolute, normal path
    of plain characters, not the root."""
    if not isinstance(directory, str) or not _PATH_CHARACTERS.fullmatch(directory) or len(directory) > 500:
        return "give an absolute directory path of letters, digits and . _ + ~ @ % = , : / -"
    if not directory.startswith("/") or posixpath.normpath(directory) != directory or directory == "/":
        return "give an absolute directory path other than / without '.', '..', '//' or a trailing '/'"
    return None


def _tarball_errors(options: BuildOptions, errors: dict[str, str]) -> None:
    source = options.source
    name, directory = source.tarball_path, source.tarball_dir
    wanted = (
        f"give the file name of a release tarball in {directory} on the host, e.g. postgresql-15.20.tar.bz2 "
        "(letters, digits and . _ + ~ -; no '/', no '..', not starting with '.'): builds take tarballs only "
        "from that directory"
    )
    if problem := tarball_dir_problem(directory):
        errors["tarball_path"] = f"tarball directory {str(directory)[:80]!r}: {problem}"
    elif not isinstance(name, str) or not name:
        errors["tarball_path"] = f"tarball: {wanted}"
    elif not _TARBALL_NAME.fullmatch(name):
        errors["tarball_path"] = f"tarball {name[:80]!r}: {wanted}"
    elif not name.endswith(TARBALL_SUFFIXES):
        errors["tarball_path"] = f"tarball {name}: a release tarball ends in {', '.join(TARBALL_SUFFIXES)}"
    if source.sha256 and not (isinstance(source.sha256, str) and _SHA256.fullmatch(source.sha256)):
        errors["sha256"] = (
            f"SHA-256 {str(source.sha256)[:80]!r}: give the 64 hexadecimal digits published with the tarball, "
            "or nothing"
        )
    for field, value in (("package", source.package), ("package_version", source.package_version)):
        if value:
            errors[field] = f"{field.replace('_', ' ')}: only for a Debian source"


def _size_errors(options: BuildOptions, errors: dict[str, str]) -> None:
    sizes = (
        ("block_size_kb", "block size", options.block_size_kb, BLOCK_SIZES_KB, "kB"),
        ("wal_block_size_kb", "WAL block size", options.wal_block_size_kb, WAL_BLOCK_SIZES_KB, "kB"),
        ("segment_size_gb", "segment size", options.segment_size_gb, SEGMENT_SIZES_GB, "GB"),
    )
    for field, name, value, allowed, unit in sizes:
        if not _is_int(value) or value not in allowed:
            errors[field] = f"{name} {str(value)[:20]} {unit}: PostgreSQL accepts {_choices(allowed, unit)}"


def _flag_errors(options: BuildOptions, errors: dict[str, str]) -> None:
    flags = options.configure_flags
    if not isinstance(flags, tuple) or not all(isinstance(flag, str) for flag in flags):
        errors["configure_flags"] = "configure flags: give a list of flags"
        return
    unknown = [flag for flag in flags if flag not in CONFIGURE_FLAGS]
    major = major_version(options.version)
    if unknown:
        errors["configure_flags"] = (
            f"configure flag {unknown[0][:60]!r} is not one benchlab allows; allowed: {', '.join(CONFIGURE_FLAGS)}"
        )
    elif list(flags) != sorted(set(flags)):
        errors["configure_flags"] = f"configure flags: give each flag once, sorted: {', '.join(sorted(set(flags)))}"
    elif conflict := next((pair for pair in CONFLICTING_FLAGS if set(pair) <= set(flags)), None):
        errors["configure_flags"] = f"configure flags {conflict[0]} and {conflict[1]} contradict each other: pick one"
    elif major is not None and (late := [f for f in flags if FLAG_SINCE_MAJOR.get(f, 0) > major]):
        errors["configure_flags"] = (
            f"configure flag {late[0]} needs PostgreSQL {FLAG_SINCE_MAJOR[late[0]]} or later, not {options.version}"
        )


def build_option_errors(options: BuildOptions) -> dict[str, str]:
    """field -> what is wrong and what is allowed; {} when the options are valid."""
    errors: dict[str, str] = {}
    if message := _version_error(options.version):
        errors["version"] = message
    try:
        kind = SourceKind(options.source.kind)
    except ValueError:
        errors["source"] = (
            f"source {str(options.source.kind)[:40]!r}: benchlab builds from Debian's source package of an "
            f"installed version ({SourceKind.DEBIAN.value}) or from a release tarball ({SourceKind.TARBALL.value})"
        )
    else:
        (_debian_errors if kind is SourceKind.DEBIAN else _tarball_errors)(options, errors)
    _size_errors(options, errors)
    _flag_errors(options, errors)
    return errors


def check_build_options(options: BuildOptions) -> None:
    """InvalidOption naming every problem, for callers that got past the forms."""
    if errors := build_option_errors(options):
        raise InvalidOption("; ".join(errors.values()))


def tarball_file(source: BuildSource) -> str:
    """Where a tarball source's file is on the host, before symbolic links are resolved (there,
    pg_build_source.resolve_tarball checks that it stays in the directory)."""
    return f"{source.tarball_dir}/{source.tarball_path}"


def canonical_options(options: BuildOptions) -> dict[str, object]:
    """Everything that changes the binaries, in one canonical form (the key's input and the
    manifest's record). A tarball with a published checksum is that content wherever it lies."""
    check_build_options(options)
    source = options.source
    if source.kind == SourceKind.DEBIAN:
        origin = {"kind": "debian", "package": source.package, "package_version": source.package_version}
    elif source.sha256:
        origin = {"kind": "tarball", "sha256": source.sha256.lower()}
    else:  # its place (as earlier builds, named by path, were keyed)
        origin = {"kind": "tarball", "tarball_path": tarball_file(source)}
    return {
        "recipe": RECIPE_VERSION,
        "version": options.version,
        "source": origin,
        "block_size_kb": options.block_size_kb,
        "wal_block_size_kb": options.wal_block_size_kb,
        "segment_size_gb": options.segment_size_gb,
        "configure_flags": list(options.configure_flags),
    }


def build_key(options: BuildOptions) -> str:
    """The exact cache key: 12 hex digits of the canonical options' SHA-256."""
    text = json.dumps(canonical_options(options), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def build_prefix(options: BuildOptions) -> str:
    """Where the build is installed: readable (version, sizes) and exact (the key)."""
    sizes = f"b{options.block_size_kb}k-w{options.wal_block_size_kb}k-s{options.segment_size_gb}g"
    return f"{BUILDS_ROOT}/pg-{options.version}-{sizes}-{build_key(options)}"


def build_label(options: BuildOptions) -> str:
    """ "PostgreSQL 15.20, 4 kB pages, 8 kB WAL blocks (benchlab build)", plus what else differs."""
    check_build_options(options)
    parts = [f"PostgreSQL {options.version}", f"{options.block_size_kb} kB pages"]
    parts.append(f"{options.wal_block_size_kb} kB WAL blocks")
    if options.segment_size_gb != 1:
        parts.append(f"{options.segment_size_gb} GB segments")
    parts += options.configure_flags
    return f"{', '.join(parts)} (benchlab build)"


def configure_args(options: BuildOptions) -> list[str]:
    """configure's arguments: the prefix, the sizes, then the chosen flags (one argv word each)."""
    return [
        f"--prefix={build_prefix(options)}",
        f"--with-blocksize={options.block_size_kb}",
        f"--with-wal-blocksize={options.wal_block_size_kb}",
        f"--with-segsize={options.segment_size_gb}",
        *options.configure_flags,
    ]
