"""Why the storage under test failed, in PostgreSQL's and the kernel's own words.

A device that fails under a run shows up as something else: an I/O error makes PostgreSQL
PANIC, so pgbench aborts ("perhaps the backend died") and the next psql finds the server in
recovery; ext4 aborts its journal and the filesystem goes read-only; a full disk makes
`pgbench -i` stop with a COPY error. When a stage fails after the storage is prepared, or
pgbench exits non-zero, the run looks at what tells: PostgreSQL's PANIC/FATAL/ERROR lines
about I/O (from the server log's tail, which lives on the device and so holds what could still
be written there, and from what the failing command printed), the kernel's lines about the
device since the run began, and whether the mount is read-only now. A few of each, deduplicated,
become the reason the run fails with (errors.StorageFailed); nothing found, the failure stays
what it was.

The parsers are pure functions; `FaultWatch` gathers their input on the host.
"""

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from runs.lab.errors import CommandFailed, CommandTimeout, ConnectionLost, LabError, StorageFailed
from runs.lab.host.run_user import run_as_run_user
from runs.lab.pgbench.scale_room import BYTES_PER_SCALE
from runs.lab.postgres.cluster import Cluster
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.mounts import dmesg_message, is_mounted, kernel_log_since, mounted_options
from runs.lab.storage.prepare import PreparedStorage
from runs.lab.transport.interface import Transport

NO_SPACE = "No space left on device"
# The errno texts (strerror) that mean the storage, not the query, failed.
STORAGE_ERRNOS = ("Input/output error", NO_SPACE, "Read-only file system", "Disk quota exceeded")
POSTGRES_LINES = 3  # at most this many of PostgreSQL's lines in a reason
KERNEL_LINES = 4  # and of the kernel's
LOG_TAIL_BYTES = 256 * 1024  # of the server log and of a command's output: a user's settings may make them long

_PG_MESSAGE = re.compile(r"\b(PANIC|FATAL|ERROR):\s+(.*)")
# What the kernel says when a filesystem or a block device fails (ext4, xfs, btrfs, the block layer).
_KERNEL_FAULT = re.compile(
    r"error|read-only|readonly|abort|shut ?down|corrupt|no space|lost .*write|fail|critical", re.IGNORECASE
)
# Said on a healthy device too: mkfs asking a loop device to zero a range it cannot, rate limits.
_KERNEL_NOISE = re.compile(r"operation not supported|callbacks suppressed", re.IGNORECASE)
# The filesystem's state, then its own errors, then the block layer's: told in that order.
_KERNEL_RANKS = (
    re.compile(r"read-only|readonly|shut ?down|Aborting journal|forced", re.IGNORECASE),
    re.compile(r"EXT4-fs error|BTRFS.*(error|critical)|XFS .*error|JBD2", re.IGNORECASE),
)


def _masked(line: str) -> str:
    """The line with its numbers (sector, block, inode, flags) masked: one kind of message, once."""
    return re.sub(r"\b(0x[0-9a-fA-F]+|\d+)\b", "N", line)


def _first_of_each(lines: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    kept = []
    for line in lines:
        key = _masked(line)
        if key not in seen:
            seen.add(key)
            kept.append(line)
    return kept


def postgres_storage_lines(text: str) -> list[str]:
    """PostgreSQL's PANIC lines and its FATAL/ERROR lines about storage, as "SEVERITY: message",
    from a server log or a client's output (pgbench quotes the server), first of each kind."""
    found = []
    for line in text.splitlines():
        match = _PG_MESSAGE.search(line)
        if match is None:
            continue
        severity, message = match.group(1), " ".join(match.group(2).split())
        if severity == "PANIC" or any(errno in message for errno in STORAGE_ERRNOS):
            found.append(f"{severity}: {message}")
    return _first_of_each(found)


def kernel_device_lines(lines: Iterable[str], device: str) -> list[str]:
    """The kernel's complaints about `device` (a kernel name such as loop3 or nvme0n1), without
    timestamps, first of each kind, the most telling first (the filesystem's state, its errors,
    then the block layer's I/O errors)."""
    names = re.compile(rf"(?<![\w-]){re.escape(device)}(?!\w)")  # loop1, not loop10 nor dm-loop1
    found = [
        dmesg_message(line)
        for line in lines
        if names.search(line) and _KERNEL_FAULT.search(line) and not _KERNEL_NOISE.search(line)
    ]
    unique = _first_of_each(found)

    def rank(line: str) -> int:
        return next((i for i, pattern in enumerate(_KERNEL_RANKS) if pattern.search(line)), len(_KERNEL_RANKS))

    return sorted(unique, key=rank)  # stable: in the order they came within a rank


def _capped(lines: list[str], limit: int) -> str:
    more = len(lines) - limit
    return "; ".join(lines[:limit]) + (f" (and {more} more)" if more > 0 else "")


@dataclass(frozen=True)
class StorageFault:
    postgres: list[str]
    kernel: list[str]
    read_only: bool

    @property
    def full(self) -> bool:
        return any(NO_SPACE in line for line in self.postgres + self.kernel)

    @property
    def reason(self) -> str:
        """One line: PostgreSQL's words, the kernel's, the filesystem's state."""
        parts = []
        if self.postgres:
            parts.append(f"PostgreSQL: {_capped(self.postgres, POSTGRES_LINES)}")
        if self.kernel:
            parts.append(f"kernel: {_capped(self.kernel, KERNEL_LINES)}")
        if self.read_only:
            parts.append("the filesystem is read-only now")
        return " — ".join(parts)


def storage_fault(
    postgres_texts: Iterable[str], kernel_lines: list[str], device: str | None, read_only: bool
) -> StorageFault | None:
    """What the texts say about the storage, or None if they say nothing about it."""
    postgres = _first_of_each(line for text in postgres_texts for line in postgres_storage_lines(text))
    kernel = kernel_device_lines(kernel_lines, device) if device else []
    if not (postgres or kernel or read_only):
        return None
    return StorageFault(postgres, kernel, read_only)


def scale_size_hint(scale: int) -> str:
    """How much room `pgbench -i` needs (scale_room.py: tables and indexes per unit of scale,
    measured), plus the cluster and its WAL."""
    tables = human_size(scale * BYTES_PER_SCALE)
    return f"scale {scale} needs about {tables} for its tables and indexes, plus the cluster and its WAL"


def human_size(size_bytes: int) -> str:
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= factor:
            return f"{size_bytes / factor:.3g} {unit}"
    return f"{size_bytes} bytes"


@dataclass
class FaultWatch:
    """The storage a run prepared, watched for faults: the kernel's log is read from `since`
    (taken before the run touched the device). The run updates `cluster` and `doing` as it goes."""

    transport: Transport
    storage: PreparedStorage
    device: DeviceIdentity
    since: float
    cluster: Cluster | None = None
    doing: str = "creating the database cluster"
    scale: int | None = None  # set while `pgbench -i` loads: a full device then says what was asked

    def diagnose(self, output: str = "") -> StorageFault | None:
        """Never raises: a host that cannot be asked leaves the failure as it was."""
        try:
            server_log = self._server_log_tail()
            kernel = kernel_log_since(self.transport, self.since) if self.storage.device_node else []
            read_only = self._read_only()
        except LabError:
            return None
        device = self.storage.device_node.rsplit("/", 1)[-1] if self.storage.device_node else None
        return storage_fault([output, server_log], kernel, device, read_only)

    def failure(
        self, fault: StorageFault, command: str = "", exit_status: int | None = None, output: str = ""
    ) -> StorageFailed:
        hint = scale_size_hint(self.scale) if fault.full and self.scale is not None else ""
        return StorageFailed(
            device=self.device.path,
            node=self.storage.device_node,
            fstype=self.storage.fstype,
            size=human_size(self.device.size_bytes) if self.device.size_bytes else None,
            doing=self.doing,
            reason=fault.reason,
            full=fault.full,
            hint=hint,
            command=command,
            exit_status=exit_status,
            output=output,
        )

    def raise_if_faulty(self, command: str, exit_status: int | None, output: str) -> None:
        """A command that exited non-zero (pgbench): StorageFailed if the storage is why."""
        fault = self.diagnose(output)
        if fault is not None:
            raise self.failure(fault, command, exit_status, output)

    @contextmanager
    def explaining(self) -> Iterator["FaultWatch"]:
        """A lab failure inside becomes StorageFailed when the storage is why; unchanged otherwise
        (a lost connection is not asked about: the host is not there to answer)."""
        try:
            yield self
        except (StorageFailed, ConnectionLost):
            raise
        except LabError as exc:
            fault = self.diagnose(str(exc))
            if fault is None:
                raise
            details = _command_details(exc)
            raise self.failure(fault, *details) from exc

    def _read_only(self) -> bool:
        """Read-only now, and not as mounted (the kernel made it so after an error)."""
        mountpoint = self.storage.mountpoint
        if "ro" in self.storage.mount_options.split(",") or not is_mounted(self.transport, mountpoint):
            return False
        return "ro" in mounted_options(self.transport, mountpoint).split(",")

    def _server_log_tail(self) -> str:
        return command_output_tail(self.transport, self.cluster.log_file) if self.cluster is not None else ""


def command_output_tail(transport: Transport, path: str) -> str:
    """The end of a file the run's user wrote (a server log, a command's output), read as that user."""
    tail = ["tail", "-c", str(LOG_TAIL_BYTES), "--", path]
    return run_as_run_user(transport, tail, check=False, timeout=30).stdout


def _command_details(exc: LabError) -> tuple[str, int | None, str]:
    """The failed command, its exit status and output, when the failure was a command's."""
    if isinstance(exc, CommandFailed):
        return exc.command, exc.exit_status, exc.stderr or exc.stdout
    if isinstance(exc, CommandTimeout):
        return exc.command, None, ""
    return "", None, ""
