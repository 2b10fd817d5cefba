"""PostgreSQL builds on the virtual lab (runs/lab/pgbuild/build.py): a real compile of 4 kB pages on
lab1, which has no network (its source comes from this machine's cache, filled by
scripts/fetch-pg-source), and builds that fail or are cancelled and leave nothing behind.

The real build takes about five minutes, so it is kept between test sessions on this machine:
for this module, lab1's BUILDS_ROOT is bind-mounted (inside lab1's own mount namespace) from
PERSISTENT_BUILDS, a directory of this machine that outlives the virtual lab (whose own
/var/lib/benchlab goes with it). The build's prefix there carries its exact cache key, so a later
session finds it and compiles nothing; the test never removes it. Everything else the tests make
(work dirs, staging, failed and cancelled builds, the bind mount) is removed. Sessions running at
the same time share that directory (test_build_lab uses this module's `lab1` too): each checks
only its own jobs' directories, and two builds of the same options end with one prefix.
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings

from runs.lab.errors import LabError
from runs.lab.host.probe import probe_host
from runs.lab.host.run_user import RUN_USER
from runs.lab.pgbuild import compile as pg_build_compile
from runs.lab.pgbuild.build import (
    BuildFailed,
    BuildStep,
    build_postgres,
    clean_build_leftovers,
    find_build,
    remove_build,
)
from runs.lab.pgbuild.model import BuildPaths
from runs.lab.pgbuild.options import (
    BUILDS_ROOT,
    MANIFEST_NAME,
    TARBALL_SUFFIXES,
    BuildOptions,
    BuildSource,
    SourceKind,
    build_key,
    build_prefix,
    canonical_options,
    debian_upstream_version,
)
from runs.lab.pgbuild.place import place
from runs.lab.pgbuild.source import SOURCE_CACHE, dsc_orig_tarball
from runs.lab.pgbuild.sources import host_sources
from runs.lab.pgbuild.verify import verify_install
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached, cancel, start_detached
from runs.lab.transport.ssh import SSHTransport
from runs.tests.virtual_lab import VirtualLab

pytestmark = pytest.mark.lab

PERSISTENT_BUILDS = "/var/cache/benchlab/test-builds"  # on this machine: outlives every virtual lab
JOB = f"t{os.getpid()}"  # job names of this session's own


class Stop(Exception):
    """What a test's observer raises to stop a build (as a cancel does in the worker)."""


class RecordingObserver:
    def __init__(self, on_line: Callable[[str], None] | None = None) -> None:
        self.steps: list[BuildStep] = []
        self.lines: list[str] = []
        self.progress_seen: list[tuple[BuildStep, float]] = []
        self.processes: list[tuple[BuildStep, Detached]] = []
        self.on_started: Callable[[BuildStep, Detached], None] | None = None
        self.on_line = on_line

    def step(self, step: BuildStep) -> None:
        self.steps.append(step)

    def line(self, text: str) -> None:
        self.lines.append(text)
        if self.on_line is not None:
            self.on_line(text)

    def progress(self, percent: float) -> None:
        self.progress_seen.append((self.steps[-1], percent))

    def started(self, process: Detached) -> None:
        self.processes.append((self.steps[-1], process))
        if self.on_started is not None:
            self.on_started(self.steps[-1], process)


@pytest.fixture(scope="module")
def lab1(virtual_lab: VirtualLab) -> Iterator[SSHTransport]:
    transport = virtual_lab.connect("lab1")
    transport.run(["install", "-d", "-m", "0755", "-o", "root", "-g", "root", PERSISTENT_BUILDS, BUILDS_ROOT])
    transport.run(["mount", "--bind", PERSISTENT_BUILDS, BUILDS_ROOT])
    try:
        yield transport
    finally:
        transport.run(["umount", BUILDS_ROOT])
        transport.close()


@pytest.fixture
def connect(virtual_lab: VirtualLab) -> Callable[[], Transport]:
    return lambda: virtual_lab.connect("lab1")


def cached_sources() -> dict[str, tuple[Path, str]]:
    """Debian version -> (upstream tarball, its SHA-256 from the .dsc) of each complete
    postgresql-15 source in this machine's cache."""
    found = {}
    for dsc in Path(SOURCE_CACHE).glob("postgresql-15_*.dsc"):
        name, sha256 = dsc_orig_tarball(dsc.read_text())
        if (Path(SOURCE_CACHE) / name).is_file():
            found[dsc.name.removeprefix("postgresql-15_").removesuffix(".dsc")] = (Path(SOURCE_CACHE) / name, sha256)
    return found


def tarball_source(tarball: Path, sha256: str = "", name: str = "") -> BuildSource:
    """A build source of a cached tarball, linked by its name (or `name`) into the tests' tarball
    directory (settings.PG_TARBALL_DIR, root's): builds take tarballs only from there."""
    directory = Path(settings.PG_TARBALL_DIR)
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    name = name or tarball.name
    with contextlib.suppress(FileExistsError):  # linked by an earlier session
        os.link(tarball, directory / name)
    return BuildSource(SourceKind.TARBALL, tarball_path=name, sha256=sha256, tarball_dir=str(directory))


def tarballs_there(directory: str) -> str:
    """The tarballs a refusal names: those in the tests' tarball directory (this test's cached one,
    and the release-named link of test_host_sources_lists_...), not links leading out of it."""
    names = [p.name for p in Path(directory).iterdir() if p.is_file() and not p.is_symlink()]
    return ", ".join(sorted(name for name in names if name.endswith(TARBALL_SUFFIXES)))


def version_order(debian_version: str) -> list[int]:
    return [int(part) for part in re.findall(r"[0-9]+", debian_version)]


def real_build_source() -> tuple[str, BuildSource, Path]:
    """What the real build compiles: Debian's source of the newest postgresql-15 in the cache,
    installed or not (this machine's mirror lacks the security archive's sources, so the
    installed version's may be missing), its upstream tarball checked against its .dsc's SHA-256."""
    sources = cached_sources()
    if not sources:
        pytest.fail(f"no postgresql-15 source in {SOURCE_CACHE}: run scripts/fetch-pg-source (make test does)")
    newest = max(sources, key=version_order)
    source = BuildSource(SourceKind.DEBIAN, package="postgresql-15", package_version=newest)
    return str(debian_upstream_version(newest)), source, sources[newest][0]


def four_kb_options() -> tuple[BuildOptions, Path]:
    """The real build's options (4 kB pages, 8 kB WAL blocks) and the tarball it compiles."""
    version, source, tarball = real_build_source()
    return BuildOptions(version=version, source=source, block_size_kb=4, wal_block_size_kb=8), tarball


def newest_cached_tarball() -> tuple[str, Path, str]:
    sources = cached_sources()
    if not sources:
        pytest.fail(f"no postgresql-15 source in {SOURCE_CACHE}: run scripts/fetch-pg-source (make test does)")
    newest = max(sources, key=version_order)
    return str(debian_upstream_version(newest)), *sources[newest]


def exists(transport: Transport, path: str) -> bool:
    return transport.run(["test", "-e", path], check=False).exit_status == 0


def run_user_pids(transport: Transport, name: str | None = None) -> list[str]:
    """The run user's processes on lab1 (its own PID namespace), optionally by program name."""
    argv = ["pgrep", "-u", RUN_USER, *(["-x", name] if name else [])]
    return transport.run(argv, check=False, timeout=None).stdout.split()


def jobs_dirs(transport: Transport, job_name: str) -> list[str]:
    """The work, staging and set-aside dirs of job_name and of jobs named job_name-<more>. Only
    those: test sessions running at the same time share PERSISTENT_BUILDS, each with its own jobs."""
    entries = transport.run(["ls", "-A", BUILDS_ROOT]).stdout.split()
    jobs = [entry.partition("-")[2] for entry in entries if entry.startswith(".")]  # .work-<job>, ...
    return [job for job in jobs if job == job_name or job.startswith(f"{job_name}-")]


def assert_nothing_left(transport: Transport, options: BuildOptions, job_name: str) -> None:
    paths = BuildPaths(job_name)
    for path in (paths.work_dir, paths.staged, paths.replaced, build_prefix(options)):
        assert not exists(transport, path), f"{path} was left on the host"
    assert jobs_dirs(transport, job_name) == [], f"work or staging dirs of {job_name} left in {BUILDS_ROOT}"
    assert run_user_pids(transport) == [], "processes of the build are still running"


def test_remove_build_refuses_anything_but_a_build_and_removes_a_build(lab1: SSHTransport) -> None:
    work = f"{BUILDS_ROOT}/.work-{JOB}-keep"
    build = f"{BUILDS_ROOT}/pg-test-{JOB}"
    lab1.run(["mkdir", "-p", f"{work}/src", f"{build}/bin"])
    try:
        for path in (BUILDS_ROOT, "/", "/var/lib/benchlab", work, f"{build}/bin", f"{BUILDS_ROOT}/../builds", "pg-x"):
            with pytest.raises(LabError, match=f"only a build directly under {BUILDS_ROOT} is removed"):
                remove_build(lab1, path)
        assert exists(lab1, f"{work}/src") and exists(lab1, f"{build}/bin") and exists(lab1, "/var/lib/benchlab")
        remove_build(lab1, build)
        assert not exists(lab1, build)
    finally:
        lab1.run(["rm", "-rf", work, build])


def test_a_debian_version_that_is_not_in_the_cache_is_refused_naming_what_is_and_how_to_add_one(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    source = BuildSource(SourceKind.DEBIAN, package="postgresql-15", package_version="15.1-1.pgdg120+1")
    options = BuildOptions(version="15.1", source=source, block_size_kb=2)
    observer = RecordingObserver()
    with pytest.raises(BuildFailed) as failed:
        build_postgres(lab1, connect, options, observer, job_name=f"{JOB}-missing")
    assert failed.value.step == BuildStep.SOURCE
    dscs = ", ".join(sorted(path.name for path in Path(SOURCE_CACHE).glob("*.dsc")))
    assert str(failed.value) == (
        f"the Debian source of postgresql-15 15.1-1.pgdg120+1 is not in {SOURCE_CACHE} on {lab1.label} "
        f"(.dsc files there: {dscs}): add it with `apt-get source --download-only postgresql-15=15.1-1.pgdg120+1` "
        f"run as root in {SOURCE_CACHE} on the host (scripts/fetch-pg-source does that for the installed "
        "versions), or build from a source the host has"
    )
    assert not any("apt" in line for line in observer.lines)  # apt was not asked
    assert_nothing_left(lab1, options, f"{JOB}-missing")


def test_a_source_cache_others_may_change_is_refused_before_anything_is_read_from_it(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    # Built from the cache without apt, the .dsc is trusted as the cache holds it: a cache anyone
    # may write to could hold a planted .dsc naming a planted tarball with its checksum.
    version = max(cached_sources(), key=version_order)
    source = BuildSource(SourceKind.DEBIAN, package="postgresql-15", package_version=version)
    options = BuildOptions(str(debian_upstream_version(version)), source, block_size_kb=32, wal_block_size_kb=64)
    observer = RecordingObserver()
    cache = Path(SOURCE_CACHE)
    mode = cache.stat().st_mode & 0o7777
    cache.chmod(mode | 0o002)  # the lab lock is held: no other build reads the cache meanwhile
    try:
        with pytest.raises(BuildFailed) as failed:
            build_postgres(lab1, connect, options, observer, job_name=f"{JOB}-cache-trust")
    finally:
        cache.chmod(mode)
    assert failed.value.step == BuildStep.SOURCE and observer.lines == []
    assert str(failed.value) == (
        f"the source cache {SOURCE_CACHE} on {lab1.label} (or a directory above it) may be changed by someone "
        "other than root and apt: make it root's (or apt's _apt user's) and writable by nobody else"
    )
    assert_nothing_left(lab1, options, f"{JOB}-cache-trust")


class StopAtConfigure(RecordingObserver):
    def step(self, step: BuildStep) -> None:
        super().step(step)
        if step == BuildStep.CONFIGURE:
            raise Stop("the source step is what this test is about")


def test_a_cached_debian_source_of_a_version_that_is_not_installed_is_built_from_the_cache_without_apt(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    # The lab host cannot reach Debian's mirror, and the cached version need not be the installed one.
    assert lab1.run(["getent", "hosts", "deb.debian.org"], check=False).exit_status != 0
    version = max(cached_sources(), key=version_order)
    tarball, sha256 = cached_sources()[version]
    source = BuildSource(SourceKind.DEBIAN, package="postgresql-15", package_version=version)
    # Sizes nobody builds: a build of them already on lab1 would be reused, not unpacked.
    options = BuildOptions(str(debian_upstream_version(version)), source, block_size_kb=32, wal_block_size_kb=64)
    observer = StopAtConfigure()
    with pytest.raises(Stop):
        build_postgres(lab1, connect, options, observer, job_name=f"{JOB}-cached")
    assert observer.steps == [BuildStep.SOURCE, BuildStep.CONFIGURE]
    assert f"source: {tarball}, SHA-256 {sha256} (as expected)" in observer.lines
    assert sha256 == hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert_nothing_left(lab1, options, f"{JOB}-cached")


def test_host_sources_lists_the_cached_debian_sources_and_the_tarballs_with_their_checksums(
    lab1: SSHTransport,
) -> None:
    version, tarball, sha256 = newest_cached_tarball()
    release_name = f"postgresql-{version}.tar.bz2"  # Debian's upstream tarball is the release's
    release_source = tarball_source(tarball, sha256, name=release_name)
    outside = Path(settings.PG_TARBALL_DIR) / f"postgresql-99.{os.getpid() % 100}.tar.gz"
    outside.symlink_to(tarball)  # a link leading out of the directory: no source
    try:
        found = {source.key: source for source in host_sources(lab1, settings.PG_TARBALL_DIR)}
    finally:
        outside.unlink()
    debian = found[f"debian:postgresql-15={max(cached_sources(), key=version_order)}"]
    assert (debian.kind, debian.version, debian.sha256, debian.file_name, debian.package) == (
        SourceKind.DEBIAN,
        version,
        sha256,
        tarball.name,
        "postgresql-15",
    )
    release = found[f"tarball:{release_name}"]
    assert (release.kind, release.version, release.sha256) == (SourceKind.TARBALL, version, sha256)
    assert f"tarball:{outside.name}" not in found
    assert release.build_source(settings.PG_TARBALL_DIR) == release_source


def test_host_sources_of_a_host_without_cache_or_tarball_directory_is_empty(lab1: SSHTransport) -> None:
    assert [s for s in host_sources(lab1, f"/var/tmp/no-such-dir-{JOB}") if s.kind == SourceKind.TARBALL] == []


def test_a_tarball_whose_checksum_does_not_match_fails_at_source_and_leaves_nothing(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    version, tarball, sha256 = newest_cached_tarball()
    options = BuildOptions(version=version, source=tarball_source(tarball, "0" * 64), block_size_kb=2)
    with pytest.raises(BuildFailed) as failed:
        build_postgres(lab1, connect, options, RecordingObserver(), job_name=f"{JOB}-checksum")
    assert failed.value.step == BuildStep.SOURCE
    linked = f"{settings.PG_TARBALL_DIR}/{tarball.name}"
    assert str(failed.value) == f"source tarball {linked}: its SHA-256 is {sha256}, not the expected {'0' * 64}"
    assert_nothing_left(lab1, options, f"{JOB}-checksum")


@pytest.mark.parametrize("target", ["cached tarball", "/etc/shadow", "/nonexistent/x.tar.gz"])
def test_a_tarball_linked_out_of_the_tarball_directory_is_refused_by_the_host_and_nothing_of_its_target_is_told(
    lab1: SSHTransport, connect: Callable[[], Transport], target: str
) -> None:
    version, tarball, sha256 = newest_cached_tarball()
    source = tarball_source(tarball)  # the directory with a real tarball in it
    # Outside the directory: a tarball the run user may read, a file it may not, nothing at all.
    outside = str(tarball) if target == "cached tarball" else target
    name = f"escape-{JOB}.tar.bz2"
    link = Path(source.tarball_dir) / name
    link.symlink_to(outside)
    options = BuildOptions(version, dataclasses.replace(source, tarball_path=name), block_size_kb=2)
    observer = RecordingObserver()
    try:
        with pytest.raises(BuildFailed) as failed:
            build_postgres(lab1, connect, options, observer, job_name=f"{JOB}-escape")
    finally:
        link.unlink()
    told = str(failed.value)
    assert failed.value.step == BuildStep.SOURCE and observer.steps == [BuildStep.SOURCE]
    assert told == (
        f"tarball {name} in {source.tarball_dir} on {lab1.label} leads outside that directory (a symbolic link?): "
        f"builds take only tarballs that are in it; tarballs there: {tarballs_there(source.tarball_dir)}"
    )
    assert outside not in told + "".join(observer.lines) and sha256 not in told + "".join(observer.lines)
    assert observer.lines == [] and failed.value.output == ""
    assert_nothing_left(lab1, options, f"{JOB}-escape")


def test_a_tarball_not_in_the_tarball_directory_is_refused_naming_those_that_are(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    version, tarball, _ = newest_cached_tarball()
    source = dataclasses.replace(tarball_source(tarball), tarball_path="postgresql-99.1.tar.gz")
    options = BuildOptions(version, source, block_size_kb=2)
    with pytest.raises(BuildFailed) as failed:
        build_postgres(lab1, connect, options, RecordingObserver(), job_name=f"{JOB}-absent")
    assert str(failed.value) == (
        f"there is no tarball postgresql-99.1.tar.gz in {source.tarball_dir} on {lab1.label} that {RUN_USER} may "
        f"read (builds read their source as that user: give it mode 0644); tarballs there: "
        f"{tarballs_there(source.tarball_dir)}"
    )
    assert_nothing_left(lab1, options, f"{JOB}-absent")


@pytest.mark.parametrize("directory", ["missing", "writable by all"])
def test_a_tarball_directory_that_is_missing_or_others_may_change_is_refused(
    lab1: SSHTransport, connect: Callable[[], Transport], directory: str
) -> None:
    version, tarball, _ = newest_cached_tarball()
    place = Path(f"/var/tmp/benchlab-test-tarballs-{JOB}")
    if directory == "writable by all":  # anyone could swap a tarball for a link between check and copy
        place.mkdir(mode=0o755)
        place.chmod(0o777)
        os.link(tarball, place / tarball.name)
    source = BuildSource(SourceKind.TARBALL, tarball_path=tarball.name, tarball_dir=str(place))
    options = BuildOptions(version, source, block_size_kb=2)
    try:
        with pytest.raises(BuildFailed) as failed:
            build_postgres(lab1, connect, options, RecordingObserver(), job_name=f"{JOB}-directory")
    finally:
        subprocess.run(["rm", "-rf", str(place)], check=True)
    said = {
        "missing": f"there is no tarball directory {place} on {lab1.label}: builds take release tarballs from it "
        "(an admin creates it, root's, and puts tarballs there)",
        "writable by all": f"the tarball directory {place} on {lab1.label} (or a directory above it) may be "
        "changed by someone other than root: make it root's and writable by nobody else",
    }
    assert str(failed.value) == said[directory]
    assert_nothing_left(lab1, options, f"{JOB}-directory")


def test_clean_build_leftovers_stops_a_dead_jobs_processes_and_removes_its_dirs(lab1: SSHTransport) -> None:
    paths = BuildPaths(f"{JOB}-dead")
    lab1.run(["install", "-d", "-m", "0700", "-o", RUN_USER, "-g", RUN_USER, paths.work_dir])
    lab1.run(["install", "-d", "-m", "0755", f"{paths.staged}/bin"])
    # What a worker that died mid-make leaves: a detached command of the run user in the work dir.
    process = start_detached(lab1, ["sleep", "600"], paths.work_dir, "make", user=RUN_USER)
    assert lab1.run(["kill", "-0", str(process.pid)], check=False).exit_status == 0
    clean_build_leftovers(lab1, paths.job_name)
    assert lab1.run(["kill", "-0", str(process.pid)], check=False).exit_status != 0
    assert not exists(lab1, paths.work_dir) and not exists(lab1, paths.staged)
    assert run_user_pids(lab1, "sleep") == []


def test_an_observer_that_stops_the_build_during_configure_gets_its_exception_and_nothing_is_left(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    version, tarball, _ = newest_cached_tarball()
    options = BuildOptions(version, tarball_source(tarball), block_size_kb=2)
    seen_configure: list[str] = []

    def stop_a_few_checks_in(text: str) -> None:
        if text.startswith("checking "):
            seen_configure.append(text)
        if len(seen_configure) == 20:
            raise Stop("cancelled by the test")

    observer = RecordingObserver(on_line=stop_a_few_checks_in)
    with pytest.raises(Stop):
        build_postgres(lab1, connect, options, observer, job_name=f"{JOB}-stop")
    assert observer.steps == [BuildStep.SOURCE, BuildStep.CONFIGURE]
    configure_process = observer.processes[-1][1]
    assert lab1.run(["kill", "-0", str(configure_process.pid)], check=False).exit_status != 0
    assert_nothing_left(lab1, options, f"{JOB}-stop")


def test_a_configure_error_fails_the_build_at_configure_saying_why_and_leaves_nothing(
    lab1: SSHTransport, connect: Callable[[], Transport], monkeypatch: pytest.MonkeyPatch
) -> None:
    version, tarball, sha256 = newest_cached_tarball()
    options = BuildOptions(version, tarball_source(tarball, sha256))
    real_args = pg_build_compile.configure_args
    # A value the options would refuse, injected after them: configure's own error path.
    monkeypatch.setattr(pg_build_compile, "configure_args", lambda o: [*real_args(o), "--with-blocksize=3"])
    with pytest.raises(BuildFailed) as failed:
        build_postgres(lab1, connect, options, RecordingObserver(), job_name=f"{JOB}-badflag")
    error = failed.value
    assert error.step == BuildStep.CONFIGURE
    assert str(error) == "configure failed: Invalid block size. Allowed values are 1,2,4,8,16,32."
    assert error.exit_status == 1
    assert error.command.startswith(f"./configure --prefix={build_prefix(options)} --with-blocksize=8 ")
    assert error.command.endswith(" --with-blocksize=3")
    assert "checking for gcc" in error.output or "checking " in error.output
    assert error.output.splitlines()[-1].endswith(
        "configure: error: Invalid block size. Allowed values are 1,2,4,8,16,32."
    )
    assert_nothing_left(lab1, options, f"{JOB}-badflag")


def test_a_cancel_during_make_stops_the_compilers_and_leaves_nothing(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    version, tarball, sha256 = newest_cached_tarball()
    options = BuildOptions(version, tarball_source(tarball, sha256), block_size_kb=2)
    compilers: list[str] = []
    errors: list[Exception] = []

    def cancel_once_compiling(step: BuildStep, process: Detached) -> None:
        if step != BuildStep.MAKE:
            return

        def watch_then_cancel() -> None:
            # As the worker's cancel does: from another connection, by the process's PID.
            canceller = connect()
            try:
                deadline = time.monotonic() + 60
                while not (found := run_user_pids(canceller, "cc1")) and time.monotonic() < deadline:
                    time.sleep(0.2)
                compilers.extend(found)
                time.sleep(2)
                cancel(canceller, process)
            except Exception as exc:  # noqa: BLE001 - the test thread's failure is asserted in the test
                errors.append(exc)
            finally:
                canceller.close()

        threading.Thread(target=watch_then_cancel, daemon=True).start()

    observer = RecordingObserver()
    observer.on_started = cancel_once_compiling
    with pytest.raises(BuildFailed) as failed:
        build_postgres(lab1, connect, options, observer, job_name=f"{JOB}-cancel")
    assert errors == []
    assert compilers, "no compiler was running when the test cancelled"
    assert failed.value.step == BuildStep.MAKE
    assert str(failed.value) == "make stopped by SIGINT (cancelled)"
    assert observer.steps == [BuildStep.SOURCE, BuildStep.CONFIGURE, BuildStep.MAKE]
    for pid in compilers:
        assert lab1.run(["kill", "-0", pid], check=False).exit_status != 0, f"compiler {pid} still runs"
    assert_nothing_left(lab1, options, f"{JOB}-cancel")


def test_a_4k_build_is_compiled_verified_installed_as_roots_and_then_reused(
    lab1: SSHTransport, connect: Callable[[], Transport]
) -> None:
    options, tarball = four_kb_options()
    version = options.version
    observer = RecordingObserver()
    started = time.monotonic()
    built = build_postgres(lab1, connect, options, observer, job_name=f"{JOB}-4k")
    elapsed = time.monotonic() - started
    print(f"\nbuild of {options.source.kind} {version} with 4 kB pages: {elapsed:.1f} s, reused={built.reused}")

    prefix = build_prefix(options)
    assert (built.prefix, built.bin_dir) == (prefix, f"{prefix}/bin")
    assert (built.block_size, built.wal_block_size, built.segment_size) == (4096, 8192, 2**30)
    assert built.version == version
    assert built.pgbench_version == f"pgbench (PostgreSQL) {version}"
    assert built.source_sha256 == hashlib.sha256(tarball.read_bytes()).hexdigest()
    if not built.reused:  # the first session on this machine compiles; later ones find its build
        assert observer.steps == list(BuildStep)
        assert any(line.startswith("checking for gcc") for line in observer.lines)
        make_progress = [percent for step, percent in observer.progress_seen if step == BuildStep.MAKE]
        assert len(set(make_progress)) > 20 and make_progress[-1] == 100.0
        assert max(make_progress[:-1]) <= 99 and make_progress == sorted(make_progress)
        assert [step for step, _ in observer.processes] == [BuildStep.CONFIGURE, BuildStep.MAKE, BuildStep.INSTALL]

    manifest = json.loads(lab1.run(["cat", f"{prefix}/{MANIFEST_NAME}"]).stdout)
    assert manifest["key"] == build_key(options) and manifest["options"] == canonical_options(options)
    assert manifest["verified"]["block_size"] == 4096 and manifest["verified"]["wal_block_size"] == 8192
    assert manifest["source_sha256"] == built.source_sha256
    assert "'--with-blocksize=4'" in manifest["pg_config"]["configure"]
    # Root's, with nothing writable by anyone else and no set-id bit (symlinks' modes mean nothing).
    loose = "! -type l ( ! -user 0 -o ! -group 0 -o -perm /6022 )".split()
    assert lab1.run(["find", prefix, *loose]).stdout == ""
    # A host probe lists it, with the page size its binaries report.
    installs = {install.bin_dir: install for install in probe_host(lab1).pg_installs}
    assert built.bin_dir in installs, installs
    assert (installs[built.bin_dir].block_size, installs[built.bin_dir].wal_block_size) == (4096, 8192)
    assert jobs_dirs(lab1, JOB) == []
    assert run_user_pids(lab1) == []

    assert find_build(lab1, options) == dataclasses.replace(built, reused=True)
    again = RecordingObserver()
    started = time.monotonic()
    reused = build_postgres(lab1, connect, options, again, job_name=f"{JOB}-4k-again")
    assert reused == dataclasses.replace(built, reused=True)
    assert again.steps == [] and again.lines == [] and again.processes == []
    assert time.monotonic() - started < 10
    assert find_build(lab1, dataclasses.replace(options, block_size_kb=32)) is None  # never built here


def test_verification_refuses_binaries_whose_page_size_is_not_the_one_asked_for(lab1: SSHTransport) -> None:
    options, _ = four_kb_options()
    built = find_build(lab1, options)
    assert built is not None, "runs after the 4 kB build's test, which leaves its build"
    paths = BuildPaths(f"{JOB}-verify")
    lab1.run(["install", "-d", "-m", "0700", "-o", RUN_USER, "-g", RUN_USER, paths.work_dir])
    try:
        with pytest.raises(BuildFailed) as failed:
            verify_install(lab1, dataclasses.replace(options, block_size_kb=2), built.bin_dir, f"{paths.work_dir}/a")
        assert failed.value.step == BuildStep.VERIFY
        assert str(failed.value) == "the build is not what was asked for: block_size is 4096 bytes, not 2048"
        facts = verify_install(lab1, options, built.bin_dir, f"{paths.work_dir}/b")
        assert (facts.block_size, facts.wal_block_size, facts.segment_size) == (4096, 8192, 2**30)
        assert facts.postgres_version == f"postgres (PostgreSQL) {options.version}"
        assert run_user_pids(lab1) == []  # both test clusters were stopped
    finally:
        clean_build_leftovers(lab1, paths.job_name)
    assert not exists(lab1, paths.work_dir)


def test_placing_a_build_replaces_a_stale_prefix_whole_and_never_writes_through_a_planted_link(
    lab1: SSHTransport,
) -> None:
    # Options of this session's own (an unchecked tarball is keyed by its path): a prefix no
    # other session uses.
    source = BuildSource(SourceKind.TARBALL, tarball_path=f"benchlab-test-{JOB}.tar.gz")
    options = BuildOptions("15.20", source, block_size_kb=16)
    prefix, paths = build_prefix(options), BuildPaths(f"{JOB}-place")
    manifest_path = f"{paths.staged}/{MANIFEST_NAME}"
    make_trees = (
        'mkdir -p "$1/bin" "$2/bin" && echo old > "$1/bin/old" && echo new > "$2/bin/new" && '
        'echo untouched > "$2/target" && ln -s "$2/target" "$3"'
    )
    lab1.run(["sh", "-c", make_trees, "sh", prefix, paths.staged, manifest_path])
    try:
        place(lab1, paths, options, {"format": 1, "key": "a test's"})
        assert lab1.run(["ls", f"{prefix}/bin"]).stdout.split() == ["new"]
        assert json.loads(lab1.run(["cat", f"{prefix}/{MANIFEST_NAME}"]).stdout) == {"format": 1, "key": "a test's"}
        assert lab1.run(["test", "-L", f"{prefix}/{MANIFEST_NAME}"], check=False).exit_status != 0
        assert lab1.run(["cat", f"{prefix}/target"]).stdout == "untouched\n"
        assert not exists(lab1, paths.staged) and not exists(lab1, paths.replaced)
        assert find_build(lab1, options) is None  # a manifest that does not match is no build
    finally:
        remove_build(lab1, prefix)
        clean_build_leftovers(lab1, paths.job_name)
    assert not exists(lab1, prefix)
