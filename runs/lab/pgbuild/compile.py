"""The CONFIGURE, MAKE and INSTALL steps: upstream's build, run as the unprivileged run user.

configure and make run code from the tarball, so never as root. Each command runs detached in
the job's work dir and is followed across lost connections (follow.run_followed): a network
blip does not end a 5-minute compile, and a cancel stops it at once (its whole session).
"""

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from runs.lab.errors import CommandFailed
from runs.lab.host.run_user import RUN_USER, run_as_run_user
from runs.lab.pgbench.follow import run_followed
from runs.lab.pgbuild.model import BuildFailed, BuildObserver, BuildPaths, BuildStep, failure_reason
from runs.lab.pgbuild.options import BuildOptions, build_prefix, configure_args
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached

CONFIGURE_TIMEOUT_S = 3600
MAKE_TIMEOUT_S = 6 * 3600  # a slow host, one core
INSTALL_TIMEOUT_S = 3600
# PostgreSQL 15's configure prints 388 "checking ..." lines from 323 places in the script.
CHECKS_PER_SITE = 1.2
# All of a command's output on stderr, the stream run_followed follows, in its order.
_IN_DIR = 'cd "$1" && shift && exec "$@" 1>&2'
_CHECK_SITES = ("-e", 'as_echo_n "checking ', "-e", 'printf %s "checking ')
# The .c files a plain `make` compiles: the tree's, but not contrib, tests, tools or Windows'.
_COUNT_UNITS = (
    "find src -name '*.c' ! -path 'src/test/*' ! -path 'src/tools/*' ! -path 'src/tutorial/*' "
    "! -path 'src/interfaces/ecpg/test/*' ! -path '*win32*' | wc -l"
)
# A compiler invocation for one .c file, as make echoes it ("gcc ... -c -o x.o x.c"); some files
# are compiled more than once (src/port, src/common for the server and for libraries):
# PostgreSQL 15.18 printed 1209 such lines for the 1114 files _COUNT_UNITS finds.
_COMPILE_LINE = re.compile(r"\s-c\s.*\S\.c(\s|$)")
COMPILES_PER_UNIT = 1.09


@dataclass
class Progress:
    """A step's progress estimate from the lines it prints: matching lines over the expected
    count, capped at 99 until the command has exited well; reported when the percent changes."""

    observer: BuildObserver
    expected: float
    pattern: re.Pattern[str]
    seen: int = 0
    reported: int = -1

    def feed(self, line: str) -> None:
        if self.expected <= 0 or not self.pattern.search(line):
            return
        self.seen += 1
        percent = min(99, int(100 * self.seen / self.expected))
        if percent != self.reported:
            self.reported = percent
            self.observer.progress(float(percent))


@dataclass
class StepRunner:
    """Runs a step's commands as the run user in the work dir, detached and followed; remembers
    the command running now, so that a failure or cancel can stop it."""

    transport: Transport
    connect: Callable[[], Transport]
    observer: BuildObserver
    paths: BuildPaths
    running: Detached | None = None
    outputs: dict[str, str] = field(default_factory=dict)

    def _started(self, process: Detached) -> None:
        self.running = process
        self.observer.started(process)

    def run(
        self, step: BuildStep, name: str, argv: list[str], timeout_s: float, progress: Progress | None = None
    ) -> str:
        def on_line(text: str) -> None:
            self.observer.line(text)
            if progress is not None:
                progress.feed(text)

        place = Detached(run_dir=self.paths.work_dir, name=name, pid=0, user=RUN_USER)
        wrapped = ["sh", "-c", _IN_DIR, "sh", self.paths.src_dir, *argv]
        try:
            output = run_followed(self.transport, self.connect, wrapped, place, on_line, self._started, timeout_s)
        except CommandFailed as exc:
            self.running = None  # it has exited
            output = exc.stderr + exc.stdout
            reason = failure_reason(step, exc.exit_status, output)
            command = shlex.join(argv)
            raise BuildFailed(step, reason, command=command, exit_status=exc.exit_status, output=output) from exc
        self.running = None
        self.observer.progress(100.0)
        self.outputs[name] = output
        return output


def _count(transport: Transport, paths: BuildPaths, script: str, *args: str) -> int:
    found = run_as_run_user(transport, ["sh", "-c", f'cd "$1" && shift && {script}', "sh", paths.src_dir, *args])
    text = found.stdout.strip()
    return int(text) if text.isdigit() else 0


def configure(runner: StepRunner, options: BuildOptions) -> None:
    sites = _count(runner.transport, runner.paths, 'grep -c "$@" configure', *_CHECK_SITES)
    progress = Progress(runner.observer, sites * CHECKS_PER_SITE, re.compile(r"^checking "))
    argv = ["./configure", *configure_args(options)]
    runner.run(BuildStep.CONFIGURE, "configure", argv, CONFIGURE_TIMEOUT_S, progress)


def make(runner: StepRunner) -> None:
    """`make -j<cores>`, its progress the compiler lines seen over the .c files it will compile."""
    units = _count(runner.transport, runner.paths, _COUNT_UNITS)
    cores = runner.transport.run(["nproc"]).stdout.strip()
    jobs = cores if cores.isdigit() and int(cores) > 0 else "1"
    progress = Progress(runner.observer, units * COMPILES_PER_UNIT, _COMPILE_LINE)
    runner.run(BuildStep.MAKE, "make", ["make", f"-j{jobs}"], MAKE_TIMEOUT_S, progress)


def install_image(runner: StepRunner, options: BuildOptions) -> None:
    """`make install` into DESTDIR, then the installed prefix moved out of it to image/, all
    as the run user (root seals it afterwards: pg_build_place.seal)."""
    destdir = runner.paths.destdir
    runner.run(BuildStep.INSTALL, "install", ["make", "install", f"DESTDIR={destdir}"], INSTALL_TIMEOUT_S)
    staged_prefix = f"{destdir}{build_prefix(options)}"
    moved = run_as_run_user(runner.transport, ["mv", "-T", "--", staged_prefix, runner.paths.image], check=False)
    if moved.exit_status != 0:
        raise BuildFailed(
            BuildStep.INSTALL,
            f"make install left no {staged_prefix} on {runner.transport.label}",
            command="mv -T " + shlex.join([staged_prefix, runner.paths.image]),
            exit_status=moved.exit_status,
            output=moved.stderr,
        )
