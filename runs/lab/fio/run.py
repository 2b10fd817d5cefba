"""A raw device baseline with fio on a lab host: where fio may write, running it, its results.

Where fio writes follows from the device (`fio_target`):
- a block device is measured raw, and only if the inventory allows wiping it and every
  safety check of storage_checks.py holds (the same checks as before mkfs: identity, not a system
  disk, not in fstab, not mounted or held). Otherwise it is refused before anything runs:
  there is no filesystem of benchlab's on it to put a file in, and writing a disk the
  inventory protects is what those checks exist to prevent;
- a directory device is measured through a file on the filesystem that holds it, in a
  directory of the run's own that is removed afterwards. The result says so ("file on ext4
  at /srv/data"): a file's figures include the filesystem.

fio runs detached as root (a device node is root's) and is followed like pgbench (follow.py):
it survives a lost connection, and `fio_cancel` stops it by its PID from anywhere. Cleanup
(stop fio if it still runs, remove the file and the run directory) happens on every path.
"""

import shlex
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath

from runs.lab.benchmark.abandon import stop_collector
from runs.lab.benchmark.run import RUNS_ROOT, run_dir_for
from runs.lab.errors import CommandFailed, InvalidOption, LabError, SafetyCheckFailed
from runs.lab.fio.plan import FioPlan, FioSettings, fio_command
from runs.lab.parse.fio import FioJobResult, parse_fio_json
from runs.lab.pgbench.follow import run_followed
from runs.lab.storage.checks import DeviceIdentity, device_assert_wipeable, resolved_device_directory
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached, cancel, exit_status, is_running

PROCESS_NAME = "fio"
FILE_NAME = "benchlab-fio.dat"
# fio stopped by a signal says so in its output file ("fio: terminating on signal 2", exit
# status 128); one killed outright has the shell's 128 + SIGINT, SIGKILL or SIGTERM.
CANCELLED_NOTE = "fio: terminating on signal"
KILLED_STATUSES = (130, 137, 143)
# Beyond the file itself: a filesystem nearly full measures something else (and fills up).
FREE_SPACE_MARGIN_BYTES = 64 * 2**20
# Laying out a file before the first job, at a pessimistic 20 MB/s (a slow disk through FUSE).
LAYOUT_BYTES_PER_S = 20e6


class RawWriteRefused(SafetyCheckFailed):
    """fio would have written a raw device that the inventory or a safety check protects."""

    def __init__(self, check: str, detail: str) -> None:
        # Not SafetyCheckFailed's own message: nothing was going to be formatted.
        self.check, self.detail = check, detail
        LabError.__init__(self, f"refusing to let fio write the raw device: {check}: {detail}")


class FioCancelled(LabError):
    """fio was stopped (fio_cancel, or a signal) before its jobs finished: no baseline."""


@dataclass(frozen=True)
class FioTarget:
    mode: str  # "raw" or "file"
    path: str  # fio's --filename: the device node, or the file
    # For the result page: "raw device /dev/disk/by-id/x (/dev/sdb)", "file on ext4 at /srv/data (…)"
    description: str
    fstype: str = ""  # file mode: the filesystem under the file
    directory: str = ""  # file mode: the run's own directory (removed afterwards)


@dataclass(frozen=True)
class FioResult:
    target: FioTarget
    settings: FioSettings
    command: str  # exactly as run on the host
    fio_version: str
    jobs: dict[str, FioJobResult]
    notes: tuple[str, ...]
    raw_json: str = ""  # what fio wrote, whole (kept with the result, like a run's artifacts)


def _block_size(transport: Transport, node: str) -> int:
    return int(transport.run(["blockdev", "--getsize64", node]).stdout.strip())


def _raw_target(transport: Transport, identity: DeviceIdentity, settings: FioSettings) -> FioTarget:
    try:
        node = device_assert_wipeable(transport, identity)
    except SafetyCheckFailed as exc:
        raise RawWriteRefused(exc.check, exc.detail) from None
    size = _block_size(transport, node)
    if settings.size_bytes > size:
        raise InvalidOption(f"fio's size ({settings.size_bytes} bytes) is larger than {identity.path} ({size} bytes)")
    return FioTarget(mode="raw", path=node, description=f"raw device {identity.path} ({node})")


def _filesystem_of(transport: Transport, directory: str) -> tuple[str, str, str]:
    """(fstype, mountpoint, source) of the filesystem that holds the directory."""
    found = transport.run(["findmnt", "-n", "-o", "FSTYPE,TARGET,SOURCE", "--target", directory]).stdout.split()
    if len(found) < 3:
        raise LabError(f"cannot tell which filesystem holds {directory} on {transport.label}")
    return found[0], found[1], found[2]


def _free_bytes(transport: Transport, directory: str) -> int:
    lines = transport.run(["df", "-B1", "--output=avail", directory]).stdout.split()
    return int(lines[-1])


@contextmanager
def _file_target(
    transport: Transport, identity: DeviceIdentity, settings: FioSettings, run_key: str
) -> Iterator[FioTarget]:
    """A directory of the run's own on the directory device, removed on the way out."""
    base = resolved_device_directory(transport, identity)
    fstype, mountpoint, source = _filesystem_of(transport, base)
    free = _free_bytes(transport, base)
    if free < settings.size_bytes + FREE_SPACE_MARGIN_BYTES:
        raise InvalidOption(
            f"{identity.path} has {free // 2**20} MiB free; fio's file of {settings.size_bytes // 2**20} MiB "
            f"needs {FREE_SPACE_MARGIN_BYTES // 2**20} MiB more than that"
        )
    directory = f"{base}/benchlab-fio-{run_key}"  # as _own_file_directory names it
    # Not -p: a path already there (a planted symlink) is refused. 0700: only root writes
    # inside, so the file fio opens as root is the one made here.
    transport.run(["mkdir", "-m", "0700", "--", directory])
    try:
        yield FioTarget(
            mode="file",
            path=f"{directory}/{FILE_NAME}",
            description=f"file on {fstype} at {base} (filesystem at {mountpoint}, from {source})",
            fstype=fstype,
            directory=directory,
        )
    finally:
        transport.run(["rm", "-rf", "--one-file-system", "--", directory], check=False)


@contextmanager
def fio_target(
    transport: Transport, identity: DeviceIdentity, settings: FioSettings, run_key: str
) -> Iterator[FioTarget]:
    """Where fio may write on this device (see the module's docstring), checked on the host."""
    if identity.is_directory:
        with _file_target(transport, identity, settings, run_key) as target:
            yield target
    else:
        yield _raw_target(transport, identity, settings)


def time_limit_s(settings: FioSettings) -> float:
    """Generous: a stuck device must not hold the worker for ever, a slow one must finish."""
    layout = settings.size_bytes / LAYOUT_BYTES_PER_S
    return 2 * (settings.expected_seconds() + layout) + 120


def fio_cancel(transport: Transport, process: Detached) -> None:
    """Stop fio by its PID (its whole session): it ends its jobs, and run_fio raises FioCancelled."""
    cancel(transport, process)


def _was_stopped(transport: Transport, output_path: str, exit_status: int) -> bool:
    if exit_status in KILLED_STATUSES:
        return True
    written = transport.run(["cat", "--", output_path], check=False).stdout
    return any(line.startswith(CANCELLED_NOTE) for line in written.splitlines()[:5])


def _run_dir(transport: Transport, run_key: str) -> str:
    run_dir = run_dir_for(run_key)
    transport.run(["install", "-d", "-m", "0755", str(PurePosixPath(RUNS_ROOT).parent), RUNS_ROOT])
    transport.run(["mkdir", "-m", "0700", "--", run_dir])  # not -p: one run, one fresh directory
    return run_dir


def run_fio(
    transport: Transport,
    connect: Callable[[], Transport],
    identity: DeviceIdentity,
    settings: FioSettings,
    run_key: str,
    on_started: Callable[[Detached], None] | None = None,
    on_line: Callable[[str], None] | None = None,
) -> FioResult:
    """Measure the device with the chosen jobs; nothing of the run is left on the host afterwards.

    `connect` opens a fresh connection to the host (for following across a lost one);
    `on_started` hears fio's process as soon as it runs (to cancel it from elsewhere);
    `on_line` hears what fio prints on stderr (warnings, errors)."""
    settings.validate()
    process: Detached | None = None

    def started(detached: Detached) -> None:
        nonlocal process
        process = detached
        if on_started is not None:
            on_started(detached)

    def stop_if_running() -> None:
        # Not once its exit is recorded: its PID may be another process's by now.
        if process is not None and exit_status(transport, process) is None and is_running(transport, process):
            cancel(transport, process)

    with ExitStack() as cleanup:
        run_dir = _run_dir(transport, run_key)
        cleanup.callback(transport.run, ["rm", "-rf", "--one-file-system", "--", run_dir], check=False)
        target = cleanup.enter_context(fio_target(transport, identity, settings, run_key))
        cleanup.callback(stop_if_running)  # first of all on the way out: fio holds the file
        plan = FioPlan(settings, target.path, f"{run_dir}/fio.json")
        argv = fio_command(plan)
        place = Detached(run_dir=run_dir, name=PROCESS_NAME, pid=0)
        try:
            heard = on_line or (lambda line: None)
            run_followed(transport, connect, argv, place, heard, started, time_limit_s(settings))
        except CommandFailed as exc:
            if _was_stopped(transport, plan.output_path, exc.exit_status):
                raise FioCancelled(f"fio on {transport.label} was stopped before its jobs finished") from exc
            raise
        written = transport.run(["cat", "--", plan.output_path]).stdout
        output = parse_fio_json(written)
        result = FioResult(
            target=target,
            settings=settings,
            command=shlex.join(argv),
            fio_version=output.fio_version,
            jobs=output.jobs,
            notes=output.notes,
            raw_json=written,
        )
    return result


def _own_file_directory(transport: Transport, identity: DeviceIdentity, run_key: str) -> str:
    return f"{resolved_device_directory(transport, identity)}/benchlab-fio-{run_key}"


def clean_fio_leftovers(transport: Transport, identity: DeviceIdentity, run_key: str) -> list[str]:
    """What a run_fio whose worker died left on the host, stopped and removed (fio, a file
    device's directory, the run directory); what was done, in words. Everything is found by
    the run key, from any process."""
    done = []
    run_dir = run_dir_for(run_key)
    if stop_collector(transport, run_dir, PROCESS_NAME):
        done.append("stopped fio")
    if identity.is_directory:
        own = _own_file_directory(transport, identity, run_key)
        if transport.run(["test", "-e", own], check=False).exit_status == 0:
            transport.run(["rm", "-rf", "--one-file-system", "--", own])
            done.append(f"removed {own}")
    if transport.run(["test", "-e", run_dir], check=False).exit_status == 0:
        transport.run(["rm", "-rf", "--one-file-system", "--", run_dir])
        done.append(f"removed {run_dir}")
    return done
