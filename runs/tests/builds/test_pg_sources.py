"""What a host's source listing means (runs.lab.pgbuild.sources.parse_sources): which Debian sources
are complete, which tarballs are releases, with a real .dsc (fixtures/pg-sources/). The listing
asked of a real host is test_pg_build_lab.py."""

from runs.lab.pgbuild.options import BuildSource, SourceKind
from runs.lab.pgbuild.sources import HostSource, parse_sources
from runs.tests.captured import FIXTURES

DSC_NAME = "postgresql-15_15.18-0+deb12u1.dsc"
DSC = (FIXTURES / "pg-sources" / DSC_NAME).read_text()
ORIG = "postgresql-15_15.18.orig.tar.bz2"
ORIG_SHA256 = "11df0df97fe3ea4ba9a791faaf39cee1d2fe571e78885b5b55d8517d27c323b4"  # as the .dsc lists it


def listing(*, dsc: str = DSC, origs: tuple[tuple[str, str], ...] = ((ORIG_SHA256, ORIG),),
            tarballs: tuple[tuple[str, str], ...] = ()) -> str:  # fmt: skip
    """What the host's listing prints: each .dsc whole, then the cache's tarballs, then the tarball directory's."""
    lines = [f"@dsc {DSC_NAME}", dsc]
    lines += [f"@orig {sha} {name}" for sha, name in origs]
    lines += [f"@tarball {sha} {name}" for sha, name in tarballs]
    return "\n".join(lines) + "\n"


def test_a_complete_debian_source_is_listed_with_its_upstream_version_and_the_dscs_checksum() -> None:
    assert parse_sources(listing()) == [
        HostSource(SourceKind.DEBIAN, "15.18", ORIG_SHA256, ORIG, "postgresql-15", "15.18-0+deb12u1")
    ]
    (source,) = parse_sources(listing())
    assert source.key == "debian:postgresql-15=15.18-0+deb12u1"
    assert source.label == "PostgreSQL 15.18: Debian source postgresql-15 15.18-0+deb12u1 (cached)"
    assert source.build_source("/x") == BuildSource(
        SourceKind.DEBIAN, package="postgresql-15", package_version="15.18-0+deb12u1"
    )


def test_a_debian_source_whose_upstream_tarball_is_missing_or_differs_is_not_listed() -> None:
    assert parse_sources(listing(origs=())) == []  # apt has fetched the .dsc only
    assert parse_sources(listing(origs=(("0" * 64, ORIG),))) == []  # a partial or other download
    assert parse_sources(listing(origs=((ORIG_SHA256, "postgresql-15_15.17.orig.tar.bz2"),))) == []


def test_a_dsc_of_another_package_or_without_one_upstream_tarball_is_not_listed() -> None:
    assert parse_sources(listing(dsc=DSC.replace("Source: postgresql-15", "Source: openssl"))) == []
    assert parse_sources(listing(dsc=DSC.replace("Checksums-Sha256:", "Checksums-Sha512:"))) == []
    assert parse_sources(listing(dsc=DSC.replace("Version: 15.18-0+deb12u1", "Version: x"))) == []


def test_release_tarballs_are_listed_by_name_with_their_version_and_checksum_and_nothing_else_is() -> None:
    tarballs = (("aa" * 32, "postgresql-15.18.tar.bz2"), ("bb" * 32, "postgresql-17beta1.tar.gz"),
                ("cc" * 32, "postgresql-16.4.tar.xz"), ("dd" * 32, ORIG), ("ee" * 32, "notes.tar.gz"),
                ("ff" * 32, "postgresql-15.18.tar.bz2.asc"))  # fmt: skip
    found = parse_sources(listing(origs=(), tarballs=tarballs))
    assert [(s.key, s.version, s.sha256) for s in found] == [
        ("tarball:postgresql-15.18.tar.bz2", "15.18", "aa" * 32),
        ("tarball:postgresql-16.4.tar.xz", "16.4", "cc" * 32),
        ("tarball:postgresql-17beta1.tar.gz", "17beta1", "bb" * 32),
    ]
    assert found[0].build_source("/srv/t") == BuildSource(
        SourceKind.TARBALL, tarball_path="postgresql-15.18.tar.bz2", sha256="aa" * 32, tarball_dir="/srv/t"
    )
    assert found[0].label == "PostgreSQL 15.18: release tarball postgresql-15.18.tar.bz2"


def test_debian_sources_come_before_tarballs_and_an_empty_listing_is_no_source() -> None:
    found = parse_sources(listing(tarballs=(("aa" * 32, "postgresql-15.18.tar.bz2"),)))
    assert [s.kind for s in found] == [SourceKind.DEBIAN, SourceKind.TARBALL]
    assert parse_sources("") == []
