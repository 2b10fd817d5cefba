"""The nouns of a PostgreSQL build on a lab host: its steps, whom it tells, how it fails, what
it yields and where its files are. Shared by the build's step modules (pg_build_*.py)."""

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from runs.lab.errors import InvalidOption, LabError, tail
from runs.lab.pgbuild.options import BUILDS_ROOT
from runs.lab.transport.process import Detached


class BuildStep(StrEnum):
    SOURCE = "source"
    CONFIGURE = "configure"
    MAKE = "make"
    INSTALL = "install"
    VERIFY = "verify"


class BuildObserver(Protocol):
    def step(self, step: BuildStep) -> None: ...  # entering a step; may raise to stop (a cancel)

    def line(self, text: str) -> None: ...  # each output line, as it comes

    def progress(self, percent: float) -> None: ...  # the current step's progress estimate, 0..100

    def started(self, process: Detached) -> None: ...  # the detached command running now (cancel stops it)


class SilentObserver:
    """An observer that watches nothing (a build run from a shell or a test that needs no log)."""

    def step(self, step: BuildStep) -> None:
        pass

    def line(self, text: str) -> None:
        pass

    def progress(self, percent: float) -> None:
        pass

    def started(self, process: Detached) -> None:
        pass


class BuildFailed(LabError):
    """A build step failed; str() is a one-line reason, `output` the tail of what the step wrote."""

    def __init__(
        self, step: BuildStep, reason: str, *, command: str = "", exit_status: int | None = None, output: str = ""
    ) -> None:
        self.step, self.command, self.exit_status, self.output = step, command, exit_status, tail(output)
        super().__init__(reason)


# A signal's exit status from sh (128 + signal): how a stopped command ended, in words.
_SIGNALS = {130: "SIGINT", 137: "SIGKILL", 143: "SIGTERM"}
# make does not always die of the signal itself: a sub-make that did says so, and the top make
# exits with status 2 ("make[2]: *** [<builtin>: stringinfo.o] Interrupt").
_MAKE_STOPPED = re.compile(r"\*\*\* \[.*\] (Interrupt|Terminated|Killed)$")
_MAKE_SIGNALS = {"Interrupt": "SIGINT", "Terminated": "SIGTERM", "Killed": "SIGKILL"}


def failure_reason(step: BuildStep, exit_status: int, output: str) -> str:
    """One line saying why a step's command failed, quoting the tool where it says why."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    stopped = next((found.group(1) for line in lines if (found := _MAKE_STOPPED.search(line))), None)
    if exit_status in _SIGNALS or stopped:
        signal = _SIGNALS.get(exit_status) or _MAKE_SIGNALS[str(stopped)]
        return f"{step} stopped by {signal} (cancelled)"
    # configure's stdout and stderr share one stream: its error may end a "checking ..." line.
    said = [line.partition("configure: error: ")[2] for line in lines if "configure: error: " in line]
    if not said:
        said = [line for line in lines if re.search(r"(^|: )(fatal )?error: ", line, re.IGNORECASE)]
    if not said:
        said = [line for line in lines if "***" in line]
    # configure's own error comes last; a compiler's first error is the one that matters.
    reason = said[-1] if step == BuildStep.CONFIGURE and said else said[0] if said else ""
    return f"{step} failed: {reason[:300]}" if reason else f"{step} failed with exit status {exit_status}"


@dataclass(frozen=True)
class BuiltInstall:
    prefix: str
    bin_dir: str  # f"{prefix}/bin"
    version: str  # as `postgres --version` says it, e.g. "15.20"
    block_size: int  # bytes, from SHOW block_size on the verification cluster
    wal_block_size: int  # bytes, from SHOW wal_block_size
    segment_size: int  # bytes, from SHOW segment_size
    pgbench_version: str  # `pgbench --version`'s line
    source_sha256: str  # of the source tarball actually built
    reused: bool  # True when an existing verified build was found (cache hit)


# At most 40 characters: the test cluster's socket path (BUILDS_ROOT/.work-<job>/verify/socket/
# .s.PGSQL.<port>) must stay within the 107 bytes a unix socket path may have.
_JOB_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


@dataclass(frozen=True)
class BuildPaths:
    """Where one build job works on the host, all under BUILDS_ROOT (so the move into place is
    a rename on one filesystem). Dot names: a host probe's glob for installs skips them."""

    job_name: str

    def __post_init__(self) -> None:
        if not isinstance(self.job_name, str) or not _JOB_NAME.fullmatch(self.job_name):
            raise InvalidOption(
                f"build job name {str(self.job_name)[:60]!r}: 1-40 lower-case letters, digits, '-' or '_', "
                "starting with a letter or digit"
            )

    @property
    def work_dir(self) -> str:
        """The unprivileged user's: the source, the build, the staged install, the test cluster."""
        return f"{BUILDS_ROOT}/.work-{self.job_name}"

    @property
    def staged(self) -> str:
        """Root's: the installed tree, sealed, verified, then renamed to the prefix."""
        return f"{BUILDS_ROOT}/.staged-{self.job_name}"

    @property
    def replaced(self) -> str:
        """Root's: a stale build of the same prefix, moved aside while the new one goes in."""
        return f"{BUILDS_ROOT}/.replaced-{self.job_name}"

    @property
    def src_dir(self) -> str:
        return f"{self.work_dir}/src"

    @property
    def destdir(self) -> str:
        return f"{self.work_dir}/destdir"  # make install DESTDIR=

    @property
    def image(self) -> str:
        return f"{self.work_dir}/image"  # the installed prefix, out of DESTDIR, before root seals it

    @property
    def verify_dir(self) -> str:
        return f"{self.work_dir}/verify"  # the throw-away cluster that checks the build

    def tarball(self, suffix: str) -> str:
        return f"{self.work_dir}/source{suffix}"
