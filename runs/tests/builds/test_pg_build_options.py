"""PostgreSQL build options (runs/lab/pgbuild/options.py) and the build's pure helpers: what is
accepted, what each refusal says, configure's arguments, the cache key and the prefix. No lab."""

import dataclasses
import shlex

import pytest

from runs.lab.errors import InvalidOption
from runs.lab.pgbuild.model import BuildPaths, BuildStep, failure_reason
from runs.lab.pgbuild.options import (
    BLOCK_SIZES_KB,
    BUILDS_ROOT,
    CONFIGURE_FLAGS,
    SEGMENT_SIZES_GB,
    WAL_BLOCK_SIZES_KB,
    BuildOptions,
    BuildSource,
    SourceKind,
    build_key,
    build_label,
    build_option_errors,
    build_prefix,
    canonical_options,
    configure_args,
    debian_upstream_version,
)
from runs.lab.pgbuild.place import check_build_prefix
from runs.lab.pgbuild.source import dsc_orig_tarball
from runs.lab.pgbuild.verify import parse_sizes, setting_bytes

DEBIAN = BuildSource(SourceKind.DEBIAN, package="postgresql-15", package_version="15.20-0+deb12u1")
TARBALL = BuildSource(SourceKind.TARBALL, tarball_path="postgresql-15.20.tar.bz2", sha256="ab" * 32)
GOOD = BuildOptions(version="15.20", source=DEBIAN, block_size_kb=4)


def errors_of(**changes: object) -> dict[str, str]:
    return build_option_errors(dataclasses.replace(GOOD, **changes))  # type: ignore[arg-type]


def source_errors(source: BuildSource, version: str = "15.20") -> dict[str, str]:
    return build_option_errors(BuildOptions(version=version, source=source))


# ---- validation ---------------------------------------------------------------------------


def test_it_accepts_a_debian_and_a_tarball_build() -> None:
    assert build_option_errors(GOOD) == {}
    assert source_errors(TARBALL) == {}
    assert source_errors(dataclasses.replace(TARBALL, sha256="")) == {}  # the checksum is optional
    assert source_errors(dataclasses.replace(TARBALL, sha256="AB" * 32)) == {}


@pytest.mark.parametrize("version", ["15.20", "17.0", "10.23", "17beta1", "16rc1"])
def test_it_accepts_postgresql_release_versions(version: str) -> None:
    source = dataclasses.replace(TARBALL, sha256="")
    assert source_errors(source, version) == {}


@pytest.mark.parametrize("version", ["", "15", "15.", "15.2.1", "v15.2", "15.2; rm -rf /", "15.20\n", "latest", "1e3"])
def test_it_refuses_a_malformed_version_saying_what_a_version_looks_like(version: str) -> None:
    errors = source_errors(dataclasses.replace(TARBALL, sha256=""), version)
    assert list(errors) == ["version"]
    assert "give PostgreSQL's version as it names its release, e.g. 15.20" in errors["version"]


@pytest.mark.parametrize("version", ["9.6.24", "9.4.26", "8.4.22"])
def test_it_refuses_releases_older_than_10(version: str) -> None:
    errors = source_errors(dataclasses.replace(TARBALL, sha256=""), version)
    assert errors == {"version": f"version {version}: benchlab builds PostgreSQL 10 or later"}


def test_it_refuses_an_unknown_source_kind() -> None:
    errors = source_errors(BuildSource("git"))  # type: ignore[arg-type]
    assert list(errors) == ["source"]
    assert "'git'" in errors["source"] and "(debian)" in errors["source"] and "(tarball)" in errors["source"]


@pytest.mark.parametrize(
    "package, message",
    [
        ("postgresql-16", "package postgresql-16: PostgreSQL 15.20's source package is postgresql-15"),
        ("postgresql", "package 'postgresql': give a Debian source package such as postgresql-15"),
        ("bash", "package 'bash': give a Debian source package such as postgresql-15"),
        ("postgresql-15 bash", "package 'postgresql-15 bash': give a Debian source package such as postgresql-15"),
        ("", "package '': give a Debian source package such as postgresql-15"),
    ],
)
def test_it_refuses_a_package_that_is_not_that_releases_source(package: str, message: str) -> None:
    assert source_errors(dataclasses.replace(DEBIAN, package=package)) == {"package": message}


@pytest.mark.parametrize(
    "package_version, upstream",
    [
        ("15.20-0+deb12u1", "15.20"),
        ("15.20-1.pgdg120+1", "15.20"),
        ("1:15.20-1", "15.20"),
        ("15.20", "15.20"),
        ("17~beta1-1", "17beta1"),
    ],
)
def test_debian_versions_name_their_upstream_release(package_version: str, upstream: str) -> None:
    assert debian_upstream_version(package_version) == upstream


@pytest.mark.parametrize(
    "package_version",
    ["", "15.20-", "-1", "a15.20-1", "15.20-0+deb12u1; id", "15.20 -1", ":15.20-1", "1:-1", "x" * 101],
)
def test_it_refuses_a_package_version_that_is_not_a_debian_version(package_version: str) -> None:
    errors = source_errors(dataclasses.replace(DEBIAN, package_version=package_version))
    assert list(errors) == ["package_version"]
    assert "give the Debian version of a source in the host's source cache" in errors["package_version"]
    assert debian_upstream_version(package_version) is None


def test_it_refuses_a_package_version_of_another_release() -> None:
    errors = source_errors(dataclasses.replace(DEBIAN, package_version="15.18-0+deb12u1"))
    assert errors == {
        "package_version": "package version 15.18-0+deb12u1 is PostgreSQL 15.18, not 15.20: "
        "give the version the package holds"
    }


def test_a_debian_source_takes_no_tarball_fields_and_a_tarball_no_package() -> None:
    errors = source_errors(dataclasses.replace(DEBIAN, tarball_path="x.tar.gz", sha256="ab" * 32))
    assert errors["tarball_path"] == "tarball: only for a tarball source; a Debian source is checked against its .dsc"
    assert errors["sha256"] == "sha256: only for a tarball source; a Debian source is checked against its .dsc"
    errors = source_errors(dataclasses.replace(TARBALL, package="postgresql-15", package_version="15.20-1"))
    assert errors == {
        "package": "package: only for a Debian source",
        "package_version": "package version: only for a Debian source",
    }


NAME_WANTED = (
    "give the file name of a release tarball in /var/cache/benchlab/pg-tarballs on the host, e.g. "
    "postgresql-15.20.tar.bz2 (letters, digits and . _ + ~ -; no '/', no '..', not starting with '.'): builds take "
    "tarballs only from that directory"
)


@pytest.mark.parametrize(
    "name, says",
    [
        ("", f"tarball: {NAME_WANTED}"),
        ("/etc/shadow", f"tarball '/etc/shadow': {NAME_WANTED}"),
        ("../../etc/passwd", f"tarball '../../etc/passwd': {NAME_WANTED}"),
        ("..", f"tarball '..': {NAME_WANTED}"),
        (".hidden.tar.gz", f"tarball '.hidden.tar.gz': {NAME_WANTED}"),
        ("/var/cache/benchlab/pg-tarballs/postgresql-15.20.tar.gz", "give the file name of a release tarball in"),
        ("sub/postgresql-15.20.tar.gz", "give the file name"),
        ("$(id).tar.gz", "give the file name"),
        ("a b.tar.gz", "give the file name"),
        ("x.tar.gz\n/etc/passwd", "give the file name"),
        ("a" * 250 + ".tar.gz", "give the file name"),
        ("postgresql-15.20.zip", "tarball postgresql-15.20.zip: a release tarball ends in .tar.gz, .tar.bz2, .tar.xz"),
        ("shadow", "tarball shadow: a release tarball ends in .tar.gz, .tar.bz2, .tar.xz"),
    ],
)
def test_it_refuses_a_tarball_that_is_not_a_file_name_in_the_tarball_directory(name: str, says: str) -> None:
    errors = source_errors(dataclasses.replace(TARBALL, tarball_path=name))
    assert list(errors) == ["tarball_path"]
    assert says in errors["tarball_path"]


@pytest.mark.parametrize("directory", ["", "relative/dir", "/", "/srv/../etc", "/srv/tarballs/", "/srv/a b"])
def test_a_tarball_directory_that_is_no_plain_absolute_path_is_refused(directory: str) -> None:
    errors = source_errors(dataclasses.replace(TARBALL, tarball_dir=directory))
    assert list(errors) == ["tarball_path"]
    assert errors["tarball_path"].startswith(f"tarball directory {directory!r}: give an absolute directory path")


@pytest.mark.parametrize("sha256", ["ab" * 31, "ab" * 33, "zz" * 32, "ab" * 31 + " a", "sha256:" + "ab" * 32])
def test_it_refuses_a_checksum_that_is_not_64_hex_digits(sha256: str) -> None:
    errors = source_errors(dataclasses.replace(TARBALL, sha256=sha256))
    assert list(errors) == ["sha256"]
    assert "give the 64 hexadecimal digits published with the tarball, or nothing" in errors["sha256"]


def test_it_accepts_every_size_postgresql_accepts() -> None:
    for size in BLOCK_SIZES_KB:
        assert errors_of(block_size_kb=size) == {}
    for size in WAL_BLOCK_SIZES_KB:
        assert errors_of(wal_block_size_kb=size) == {}
    for size in SEGMENT_SIZES_GB:
        assert errors_of(segment_size_gb=size) == {}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("block_size_kb", 3, "block size 3 kB: PostgreSQL accepts 1, 2, 4, 8, 16 or 32 kB"),
        ("block_size_kb", 64, "block size 64 kB: PostgreSQL accepts 1, 2, 4, 8, 16 or 32 kB"),
        ("block_size_kb", 4096, "block size 4096 kB: PostgreSQL accepts 1, 2, 4, 8, 16 or 32 kB"),
        ("block_size_kb", "4", "block size 4 kB: PostgreSQL accepts 1, 2, 4, 8, 16 or 32 kB"),
        ("block_size_kb", True, "block size True kB: PostgreSQL accepts 1, 2, 4, 8, 16 or 32 kB"),
        ("wal_block_size_kb", 128, "WAL block size 128 kB: PostgreSQL accepts 1, 2, 4, 8, 16, 32 or 64 kB"),
        ("wal_block_size_kb", 0, "WAL block size 0 kB: PostgreSQL accepts 1, 2, 4, 8, 16, 32 or 64 kB"),
        ("segment_size_gb", 3, "segment size 3 GB: PostgreSQL accepts 1, 2, 4, 8, 16, 32 or 64 GB"),
        ("segment_size_gb", -1, "segment size -1 GB: PostgreSQL accepts 1, 2, 4, 8, 16, 32 or 64 GB"),
    ],
)
def test_it_refuses_a_size_postgresql_does_not_accept(field: str, value: object, message: str) -> None:
    assert errors_of(**{field: value}) == {field: message}


def test_it_accepts_the_safe_configure_flags() -> None:
    for flag in CONFIGURE_FLAGS:
        assert errors_of(configure_flags=(flag,)) == {}, flag
    assert errors_of(configure_flags=("--enable-cassert", "--enable-debug", "--with-lz4", "--with-openssl")) == {}


@pytest.mark.parametrize(
    "flags, message",
    [
        (("--with-llvm",), "configure flag '--with-llvm' is not one benchlab allows; allowed: --enable-debug, "),
        (("--prefix=/usr",), "configure flag '--prefix=/usr' is not one benchlab allows"),
        (("--enable-debug; rm -rf /",), "configure flag '--enable-debug; rm -rf /' is not one benchlab allows"),
        (("CFLAGS=-O0",), "configure flag 'CFLAGS=-O0' is not one benchlab allows"),
        (("--with-lz4", "--enable-debug"), "configure flags: give each flag once, sorted: --enable-debug, --with-lz4"),
        (("--enable-debug", "--enable-debug"), "configure flags: give each flag once, sorted: --enable-debug"),
        (("--with-icu", "--without-icu"), "configure flags --with-icu and --without-icu contradict each other"),
        (["--enable-debug"], "configure flags: give a list of flags"),
    ],
)
def test_it_refuses_flags_outside_the_safe_list_or_out_of_order(flags: object, message: str) -> None:
    errors = errors_of(configure_flags=flags)
    assert list(errors) == ["configure_flags"]
    assert errors["configure_flags"].startswith(message), errors["configure_flags"]


def test_it_refuses_a_flag_the_release_does_not_have() -> None:
    source = dataclasses.replace(TARBALL, sha256="")
    errors = build_option_errors(BuildOptions(version="14.15", source=source, configure_flags=("--with-zstd",)))
    assert errors == {"configure_flags": "configure flag --with-zstd needs PostgreSQL 15 or later, not 14.15"}


def test_every_flag_says_what_it_does_and_cassert_warns_about_speed() -> None:
    assert all(len(help_text) > 20 for help_text in CONFIGURE_FLAGS.values())
    assert "several times slower" in CONFIGURE_FLAGS["--enable-cassert"]
    assert "--with-llvm" not in CONFIGURE_FLAGS and "--without-llvm" not in CONFIGURE_FLAGS


def test_it_reports_every_problem_at_once() -> None:
    options = BuildOptions(
        version="x", source=BuildSource(SourceKind.TARBALL, tarball_path="rel.zip", sha256="no"), block_size_kb=3
    )
    assert set(build_option_errors(options)) == {"version", "tarball_path", "sha256", "block_size_kb"}


# ---- configure's arguments, key, prefix, label --------------------------------------------


def test_configure_gets_the_prefix_the_sizes_then_the_flags_one_word_each() -> None:
    options = dataclasses.replace(GOOD, wal_block_size_kb=16, segment_size_gb=2, configure_flags=("--enable-debug",))
    assert configure_args(options) == [
        f"--prefix={build_prefix(options)}",
        "--with-blocksize=4",
        "--with-wal-blocksize=16",
        "--with-segsize=2",
        "--enable-debug",
    ]
    # Nothing there a shell would split or interpret: quoting changes no word.
    assert all(shlex.quote(word) == word for word in configure_args(options))


def test_configure_args_refuse_invalid_options() -> None:
    with pytest.raises(InvalidOption, match="block size 3 kB"):
        configure_args(dataclasses.replace(GOOD, block_size_kb=3))


def test_the_key_is_stable_and_short() -> None:
    assert build_key(GOOD) == build_key(dataclasses.replace(GOOD))
    assert len(build_key(GOOD)) == 12 and int(build_key(GOOD), 16) >= 0
    # Computed from canonical options, not from Python's hash(): the same in every process.
    assert build_key(GOOD) == "eed799965edd"


@pytest.mark.parametrize(
    "changes",
    [
        {"block_size_kb": 8},
        {"wal_block_size_kb": 16},
        {"segment_size_gb": 2},
        {"configure_flags": ("--enable-cassert",)},
        {"source": dataclasses.replace(DEBIAN, package_version="15.20-0+deb12u2")},
        {"version": "15.21", "source": dataclasses.replace(DEBIAN, package_version="15.21-0+deb12u1")},
    ],
)
def test_the_key_changes_with_everything_that_changes_the_binaries(changes: dict[str, object]) -> None:
    assert build_key(dataclasses.replace(GOOD, **changes)) != build_key(GOOD)  # type: ignore[arg-type]


def test_a_checksummed_tarball_is_keyed_by_content_and_an_unchecked_one_by_path() -> None:
    tarball = BuildOptions(version="15.20", source=TARBALL)
    moved = dataclasses.replace(tarball, source=dataclasses.replace(TARBALL, tarball_dir="/srv/tarballs"))
    assert build_key(moved) == build_key(tarball)
    upper = dataclasses.replace(tarball, source=dataclasses.replace(TARBALL, sha256="AB" * 32))
    assert build_key(upper) == build_key(tarball)
    other = dataclasses.replace(tarball, source=dataclasses.replace(TARBALL, sha256="cd" * 32))
    assert build_key(other) != build_key(tarball)
    unchecked = dataclasses.replace(tarball, source=dataclasses.replace(TARBALL, sha256=""))
    unchecked_renamed = dataclasses.replace(
        unchecked, source=dataclasses.replace(unchecked.source, tarball_path="p.tar.gz")
    )
    unchecked_moved = dataclasses.replace(unchecked, source=dataclasses.replace(unchecked.source, tarball_dir="/srv/x"))
    keys = {build_key(unchecked), build_key(unchecked_renamed), build_key(unchecked_moved), build_key(tarball)}
    assert len(keys) == 4
    # Keyed by its place, as a build that named it by path was: that build is found again.
    by_path = {"kind": "tarball", "tarball_path": "/var/cache/benchlab/pg-tarballs/postgresql-15.20.tar.bz2"}
    assert canonical_options(unchecked)["source"] == by_path
    assert build_key(tarball) != build_key(GOOD)


def test_the_prefix_is_readable_and_exact() -> None:
    assert build_prefix(GOOD) == f"{BUILDS_ROOT}/pg-15.20-b4k-w8k-s1g-{build_key(GOOD)}"
    cassert = dataclasses.replace(GOOD, configure_flags=("--enable-cassert",))
    assert build_prefix(cassert) != build_prefix(GOOD)  # same sizes, another key
    check_build_prefix(build_prefix(GOOD))  # a prefix remove_build accepts


def test_the_label_says_version_and_sizes_and_what_else_differs() -> None:
    assert build_label(dataclasses.replace(GOOD)) == "PostgreSQL 15.20, 4 kB pages, 8 kB WAL blocks (benchlab build)"
    options = dataclasses.replace(GOOD, segment_size_gb=2, configure_flags=("--enable-cassert", "--with-lz4"))
    assert build_label(options) == (
        "PostgreSQL 15.20, 4 kB pages, 8 kB WAL blocks, 2 GB segments, --enable-cassert, --with-lz4 (benchlab build)"
    )


# ---- pure helpers of the build ------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix",
    [
        BUILDS_ROOT,
        "/",
        "/var/lib/benchlab",
        f"{BUILDS_ROOT}/",
        f"{BUILDS_ROOT}/pg-x/bin",
        f"{BUILDS_ROOT}/../runs",
        f"{BUILDS_ROOT}/.work-build-1",
        f"{BUILDS_ROOT}/.staged-build-1",
        f"{BUILDS_ROOT}//pg-x",
        "pg-x",
        "",
    ],
)
def test_only_a_direct_child_of_the_builds_root_counts_as_a_build(prefix: str) -> None:
    with pytest.raises(Exception, match=f"only a build directly under {BUILDS_ROOT} is removed"):
        check_build_prefix(prefix)


@pytest.mark.parametrize("name", ["", "Build-1", "../x", "a/b", "-x", "a b", "x" * 41, "build-1;id"])
def test_a_job_name_is_refused_unless_plain(name: str) -> None:
    with pytest.raises(InvalidOption, match="build job name"):
        BuildPaths(name)


def test_a_jobs_paths_are_dot_names_under_the_builds_root() -> None:
    paths = BuildPaths("build-17")
    assert paths.work_dir == f"{BUILDS_ROOT}/.work-build-17"
    assert paths.staged == f"{BUILDS_ROOT}/.staged-build-17"
    assert paths.src_dir.startswith(paths.work_dir + "/") and paths.verify_dir.startswith(paths.work_dir + "/")


# The .dsc of Debian's postgresql-15 15.18-0+deb12u1 as apt-get source fetched it (signature cut short).
DSC = """-----BEGIN PGP SIGNED MESSAGE-----
Hash: SHA512

Format: 3.0 (quilt)
Source: postgresql-15
Version: 15.18-0+deb12u1
Checksums-Sha1:
 fab946980b8709a3caf476eb87a2980fcc0664e8 23405115 postgresql-15_15.18.orig.tar.bz2
 b04edc34af9c6d6e85c739a24e99902cd4cca1a0 31828 postgresql-15_15.18-0+deb12u1.debian.tar.xz
Checksums-Sha256:
 11df0df97fe3ea4ba9a791faaf39cee1d2fe571e78885b5b55d8517d27c323b4 23405115 postgresql-15_15.18.orig.tar.bz2
 efe6fc2007229a2cc7b087d75cb1213d49e275ec47c4b896d5e0880b4904f8b3 31828 postgresql-15_15.18-0+deb12u1.debian.tar.xz
Files:
 bcf6d9b634d0950e74cdf332dee32ef8 23405115 postgresql-15_15.18.orig.tar.bz2
 86961f295626da49ad37bcc6189b7121 31828 postgresql-15_15.18-0+deb12u1.debian.tar.xz

-----BEGIN PGP SIGNATURE-----
"""


def test_the_upstream_tarball_and_its_checksum_come_from_the_dscs_sha256_list() -> None:
    assert dsc_orig_tarball(DSC) == (
        "postgresql-15_15.18.orig.tar.bz2",
        "11df0df97fe3ea4ba9a791faaf39cee1d2fe571e78885b5b55d8517d27c323b4",
    )


@pytest.mark.parametrize(
    "dsc",
    [
        DSC.replace("Checksums-Sha256:", "Checksums-Sha512:"),
        DSC.replace(" postgresql-15_15.18.orig.tar.bz2\nFiles", " ../../etc/x.orig.tar.bz2\nFiles").replace(
            "23405115 postgresql-15_15.18.orig.tar.bz2\n efe6", "23405115 ../x.orig.tar.bz2\n efe6"
        ),
        DSC.replace("11df0df97fe3", "11df0df97fe"),
    ],
)
def test_a_dsc_without_one_clean_upstream_tarball_entry_is_refused(dsc: str) -> None:
    with pytest.raises(ValueError, match="no single upstream tarball"):
        dsc_orig_tarball(dsc)


@pytest.mark.parametrize(
    "step, status, output, reason",
    [
        (
            BuildStep.CONFIGURE,
            1,
            "checking for gcc... gcc\nchecking for block size... configure: error: Invalid block size. "
            "Allowed values are 1,2,4,8,16,32.",
            "configure failed: Invalid block size. Allowed values are 1,2,4,8,16,32.",
        ),
        (
            BuildStep.MAKE,
            2,
            "gcc -c -o a.o a.c\na.c:3:1: error: unknown type name 'x'\nb.c:4:1: error: other\n"
            "make[2]: *** [<builtin>: a.o] Error 1",
            "make failed: a.c:3:1: error: unknown type name 'x'",
        ),
        (
            BuildStep.CONFIGURE,
            1,
            "checking for readline... no\nconfigure: error: readline library not found\nIf you have readline...",
            "configure failed: readline library not found",
        ),
        (BuildStep.MAKE, 2, "make: *** No targets specified", "make failed: make: *** No targets specified"),
        (BuildStep.MAKE, 130, "gcc -c -o a.o a.c", "make stopped by SIGINT (cancelled)"),
        (
            BuildStep.MAKE,
            2,
            "gcc -c -o a.o a.c\nmake[2]: *** [<builtin>: stringinfo.o] Interrupt\n"
            "make[1]: *** [Makefile:42: all] Error 2",
            "make stopped by SIGINT (cancelled)",
        ),
        (BuildStep.MAKE, 2, "make[1]: *** [x.o] Terminated", "make stopped by SIGTERM (cancelled)"),
        (BuildStep.INSTALL, 2, "", "install failed with exit status 2"),
    ],
)
def test_a_failed_step_is_said_in_one_line_quoting_the_tool(
    step: BuildStep, status: int, output: str, reason: str
) -> None:
    assert failure_reason(step, status, output) == reason


def test_size_settings_are_read_in_bytes() -> None:
    # As pg_settings shows them on a 4 kB-page build: segment_size in pages of the build's size.
    sizes = parse_sizes("block_size=4096= segment_size=262144=4kB wal_block_size=8192=")
    assert sizes == {"block_size": 4096, "segment_size": 2**30, "wal_block_size": 8192}
    assert setting_bytes("131072", "8kB") == 2**30
    assert setting_bytes("2", "GB") == 2 * 2**30
    with pytest.raises(ValueError, match="unknown unit"):
        setting_bytes("1", "pages")
