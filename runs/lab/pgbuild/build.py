"""PostgreSQL built from source on a lab host, with the page sizes a benchmark asks for.

`build_postgres` reuses an exact earlier build (find_build) or runs the steps
source -> configure -> make -> install -> verify (pg_build_source, _compile, _verify, _place).
The build runs as the unprivileged run user in a work dir under BUILDS_ROOT named by the job;
root only seals the installed tree and moves it into place once verified. On any failure or
cancel, what runs is stopped by PID, the work dir and staging are removed and the prefix never
exists half-written: BuildFailed (or the observer's own exception) propagates.
`clean_build_leftovers` does the same for a job whose worker died.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass

from runs.lab.errors import ConnectionLost, LabError
from runs.lab.host.run_user import RUN_USER, ensure_run_user, signal_as_run_user
from runs.lab.pgbuild.compile import StepRunner, configure, install_image, make
from runs.lab.pgbuild.model import BuildFailed, BuildObserver, BuildPaths, BuildStep, BuiltInstall, SilentObserver
from runs.lab.pgbuild.options import BUILDS_ROOT, BuildOptions, build_prefix, check_build_options
from runs.lab.pgbuild.place import find_build, install_from_manifest, manifest_for, place, remove_build, seal
from runs.lab.pgbuild.source import obtain_source
from runs.lab.pgbuild.verify import verify_install
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import cancel
from runs.lab.transport.waiting import wait_until

__all__ = [
    "BuildFailed",
    "BuildObserver",
    "BuildStep",
    "BuiltInstall",
    "SilentObserver",
    "build_postgres",
    "clean_build_leftovers",
    "find_build",
    "remove_build",
]

log = logging.getLogger(__name__)

# The run user's processes in this PID namespace working in, or holding a file open in, the
# job's work dir or staged tree: configure, make and the compilers, the test cluster, and
# whatever the tarball's code left behind. Found by root, stopped as the user.
_JOB_PIDS = (
    'for p in $(pgrep -r D,R,S,T,t,W -u "$3" --ns $$ --nslist pid); do '
    'for f in "/proc/$p/cwd" /proc/$p/fd/*; do t=$(readlink "$f") || continue; '
    'case "$t" in "$1"|"$1"/*|"$2"|"$2"/*) echo "$p"; break;; esac; done; done; true'
)


def _job_pids(transport: Transport, paths: BuildPaths) -> list[str]:
    found = transport.run(["sh", "-c", _JOB_PIDS, "sh", paths.work_dir, paths.staged, RUN_USER], timeout=60)
    return sorted({pid for pid in found.stdout.split() if pid.isdigit()})


def _stop_job_processes(transport: Transport, paths: BuildPaths) -> None:
    """SIGKILL every process of the job, by PID, until none is left (make may start more)."""

    def none_left() -> bool:
        for pid in (pids := _job_pids(transport, paths)):
            signal_as_run_user(transport, pid, "KILL")
        return not pids

    if not wait_until(none_left, 30, 0.2):
        pids = " ".join(_job_pids(transport, paths))
        raise LabError(f"processes {pids} of {paths.work_dir} on {transport.label} survived SIGKILL")


def clean_build_leftovers(transport: Transport, job_name: str) -> None:
    """Remove what a build job left on the host (a dead worker's): its processes, stopped by PID,
    its work dir with the test cluster, its staged and set-aside trees. Builds already in place
    are not touched."""
    paths = BuildPaths(job_name)
    _stop_job_processes(transport, paths)
    transport.run(["rm", "-rf", "--one-file-system", "--", paths.work_dir, paths.staged, paths.replaced], timeout=600)


def _prepare(transport: Transport, paths: BuildPaths) -> None:
    """BUILDS_ROOT root's and closed to others (so nothing in it can be swapped), and an empty
    work dir of the run user's (ensure_run_user has run)."""
    transport.run(["install", "-d", "-m", "0755", "-o", "root", "-g", "root", BUILDS_ROOT])
    owner = ["-o", RUN_USER, "-g", RUN_USER]
    transport.run(["install", "-d", "-m", "0700", *owner, paths.work_dir])


@dataclass
class _Build:
    """One build job's steps in order, and its cleanup."""

    transport: Transport
    connect: Callable[[], Transport]
    options: BuildOptions
    observer: BuildObserver
    paths: BuildPaths
    step: BuildStep = BuildStep.SOURCE  # where it is: a failure is reported as this step's

    def __post_init__(self) -> None:
        self.runner = StepRunner(self.transport, self.connect, self.observer, self.paths)

    def enter(self, step: BuildStep) -> None:
        self.step = step
        self.observer.step(step)

    def run(self) -> BuiltInstall:
        self.enter(BuildStep.SOURCE)
        source_sha256 = obtain_source(self.transport, self.options.source, self.paths, self.observer.line)
        self.enter(BuildStep.CONFIGURE)
        configure(self.runner, self.options)
        self.enter(BuildStep.MAKE)
        make(self.runner)
        self.enter(BuildStep.INSTALL)
        install_image(self.runner, self.options)
        # Nothing of the build may still run, or hold a file of the tree open for writing, once
        # root takes the tree over.
        _stop_job_processes(self.transport, self.paths)
        seal(self.transport, self.paths)
        self.enter(BuildStep.VERIFY)
        facts = verify_install(self.transport, self.options, f"{self.paths.staged}/bin", self.paths.verify_dir)
        if (finished := find_build(self.transport, self.options)) is not None:
            # Another job built the same meanwhile: keep that one (a run may be using it already).
            clean_build_leftovers(self.transport, self.paths.job_name)
            return finished
        manifest = manifest_for(self.options, facts, source_sha256, self.paths.job_name)
        place(self.transport, self.paths, self.options, manifest)
        self.observer.progress(100.0)
        clean_build_leftovers(self.transport, self.paths.job_name)  # the work dir, now that all went well
        return install_from_manifest(build_prefix(self.options), manifest, reused=False)

    def abort(self) -> None:
        """Stop what runs and remove everything of the job; on a new connection if the old one
        is gone. What cannot be cleaned now is logged (clean_build_leftovers, later, does it)."""
        for attempt in (1, 2):
            transport = self.transport if attempt == 1 else self.connect()
            try:
                if self.runner.running is not None:
                    cancel(transport, self.runner.running)
                clean_build_leftovers(transport, self.paths.job_name)
                return
            except ConnectionLost:
                if attempt == 2:
                    raise
            finally:
                if attempt == 2:
                    transport.close()


def build_postgres(
    transport: Transport,
    connect: Callable[[], Transport],
    options: BuildOptions,
    observer: BuildObserver,
    *,
    job_name: str,
) -> BuiltInstall:
    """The build of exactly `options` on the host: found (reused=True, nothing compiled) or made.

    job_name (e.g. "build-17") names the work directory; it must be unique to the job, and
    whatever an earlier job of that name left is removed first."""
    check_build_options(options)
    paths = BuildPaths(job_name)
    ensure_run_user(transport)  # find_build asks the build's postgres, as that user, what it is
    if (found := find_build(transport, options)) is not None:
        return found
    clean_build_leftovers(transport, job_name)
    _prepare(transport, paths)
    build = _Build(transport, connect, options, observer, paths)
    try:
        return build.run()
    except BaseException as exc:
        try:
            build.abort()
        except Exception:
            log.exception("cleaning up build %s on %s failed; clean_build_leftovers will", job_name, transport.label)
        if isinstance(exc, LabError) and not isinstance(exc, BuildFailed):
            raise BuildFailed(build.step, f"{build.step} failed: {str(exc).splitlines()[0][:300]}",
                              command=getattr(exc, "command", ""), exit_status=getattr(exc, "exit_status", None),
                              output=str(exc)) from exc  # fmt: skip
        raise
