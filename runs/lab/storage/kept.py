"""Storage with a loaded database that one run leaves on its host for the next run of the same setup.

Campaigns run one configuration many times; making the filesystem and loading the database
(`pgbench -i`) each time can take minutes. A run asked to keep its setup stops its cluster
cleanly and leaves the mount as it is (`KeptSetup` says what is there); the next run of the
same setup is handed that description, checks it against the host and its own specification,
and either starts the cluster again with its own settings (storage.released_unless_kept then
treats the mount as its own) or discards it and starts afresh. The service layer decides when
to keep and when to reuse; this module only makes both safe.

A kept setup comes back from benchlab's database as JSON, and discarding it unmounts and
removes files as root, so every field is checked when a KeptSetup is made: its mountpoint
must be one of benchlab's, its directory one a run made in an allowed device directory.
"""

import logging
import posixpath
import re
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any

from runs.lab.errors import CommandFailed, InvalidOption, LabError
from runs.lab.host.run_user import run_as_run_user
from runs.lab.options import FILESYSTEMS, InitOptions
from runs.lab.pgbench.commands import DATABASE_NAME
from runs.lab.postgres.cluster import Cluster, psql, stop, stop_fast
from runs.lab.storage.checks import DeviceIdentity, resolved_device_directory
from runs.lab.storage.device_paths import check_directory_device_path, normal_form
from runs.lab.storage.mounts import MOUNT_ROOT, unmount_reliably
from runs.lab.storage.prepare import MKFS_COMMAND, FilesystemSpec, PreparedStorage, released_unless_kept
from runs.lab.transport.interface import Transport

log = logging.getLogger(__name__)
_RUN_NAME = r"benchlab-[A-Za-z0-9._-]+"  # storage.mountpoint_for / directory_for


@dataclass(frozen=True)
class KeptSetup:
    """Storage with a loaded, stopped database that a run left on the host for the next run of the same setup."""

    mountpoint: str
    fstype: str
    device_node: str | None  # as it was mounted (None for tmpfs/directory)
    mount_options: str  # as /proc/mounts showed them
    mkfs_command: str  # what made the filesystem (for the next run's record)
    base_dir: str  # the cluster's base directory on the mount (data dir below it)
    pg_bin_dir: str
    database: str
    scale: int
    directory: str | None = None  # for fstype "directory": the device directory bind-mounted (to remove it later)

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise ValueError(f"not a kept setup: {problem}")

    @property
    def data_dir(self) -> str:
        return Cluster(bin_dir=self.pg_bin_dir, base_dir=self.base_dir, port=0).data_dir

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "KeptSetup":
        """ValueError on anything malformed: missing or unknown keys, wrong types, paths that
        are not benchlab's (see _problem)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"not a kept setup: {type(data).__name__} instead of an object")
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.name != "directory"}
        if unknown := set(data) - names:
            raise ValueError(f"not a kept setup: unknown keys {sorted(map(str, unknown))}")
        if missing := required - set(data):
            raise ValueError(f"not a kept setup: missing keys {sorted(missing)}")
        return cls(**dict(data))


def _problem(kept: KeptSetup) -> str:
    """What is wrong with a kept setup's fields ("" if nothing)."""
    texts = ("mountpoint", "fstype", "mount_options", "mkfs_command", "base_dir", "pg_bin_dir", "database")
    for name in texts:
        if not isinstance(getattr(kept, name), str):
            return f"{name} is not a string"
    for name in ("device_node", "directory"):
        if not isinstance(getattr(kept, name), str | None):
            return f"{name} is neither a string nor null"
    if isinstance(kept.scale, bool) or not isinstance(kept.scale, int) or kept.scale < 1:
        return f"scale {kept.scale!r} is not a positive integer"
    if kept.fstype not in FILESYSTEMS:
        return f"unknown filesystem {kept.fstype!r}"
    if not re.fullmatch(rf"{re.escape(MOUNT_ROOT)}/{_RUN_NAME}", kept.mountpoint):
        return f"{kept.mountpoint!r} is not one of benchlab's mountpoints"
    if not re.fullmatch(rf"{re.escape(kept.mountpoint)}/[A-Za-z0-9_-]+", kept.base_dir):
        return f"the cluster's directory {kept.base_dir!r} is not directly below the mountpoint"
    # Only ever compared with /proc/mounts (which escapes blanks), never given to a command.
    if not kept.mount_options.isprintable() or any(c.isspace() for c in kept.mount_options):
        return f"mount options {kept.mount_options!r} are not as /proc/mounts shows them"
    if not DATABASE_NAME.fullmatch(kept.database):
        return f"bad database name {kept.database!r}"
    try:
        normal_form(kept.pg_bin_dir)
        _check_source(kept)
    except InvalidOption as exc:
        return str(exc)
    return ""


def _check_source(kept: KeptSetup) -> None:
    """What the mount comes from fits the filesystem: a device node, tmpfs, or a run directory."""
    block = kept.fstype not in ("tmpfs", "directory")
    if block != (kept.device_node is not None):
        raise InvalidOption(f"a {kept.fstype} setup {'needs' if block else 'has no'} device node")
    node = r"/dev(/[A-Za-z0-9._-]+)+"  # /dev/loop3, /dev/nvme0n1, /dev/cciss/c0d0
    if kept.device_node is not None and not re.fullmatch(node, normal_form(kept.device_node)):
        raise InvalidOption(f"{kept.device_node!r} is not a device node")
    if (kept.fstype == "directory") != (kept.directory is not None):
        raise InvalidOption("a run directory belongs to a directory setup, and only to one")
    if kept.directory is not None:
        parent, name = posixpath.split(normal_form(kept.directory))
        if not re.fullmatch(_RUN_NAME, name):
            raise InvalidOption(f"{kept.directory!r} is not a run's directory")
        check_directory_device_path(parent)  # the device rules: never below /etc, /usr, ...


# ---- on the host ------------------------------------------------------------------------------


def _mounts_at(transport: Transport, mountpoint: str) -> list[list[str]]:
    listing = transport.run(["cat", "/proc/mounts"]).stdout
    return [fields[:4] for line in listing.splitlines() if len(fields := line.split()) >= 4 and fields[1] == mountpoint]


def _inode(transport: Transport, path: str) -> str:
    # Not -L: a symlink put in place of the run's directory is not that directory.
    return transport.run(["stat", "-c", "%d:%i", "--", path], check=False).stdout.strip()


def _source_problem(transport: Transport, kept: KeptSetup, device: DeviceIdentity, source: str, fstype: str) -> str:
    """Whether what is mounted is what the kept setup and this run's device say."""
    if kept.fstype == "tmpfs":
        return "" if fstype == "tmpfs" else f"{kept.mountpoint} holds {fstype}, not tmpfs"
    if kept.fstype == "directory":
        assert kept.directory is not None  # checked when the KeptSetup was made
        try:
            device_dir = resolved_device_directory(transport, device)
        except InvalidOption as exc:
            return str(exc)
        if posixpath.dirname(kept.directory) != device_dir:
            return f"{kept.directory} is not in this run's device directory {device_dir}"
        # A bind mount's root is the very directory it shows.
        if _inode(transport, kept.mountpoint) != _inode(transport, kept.directory):
            return f"{kept.mountpoint} does not show {kept.directory}"
        return ""
    if fstype != kept.fstype:
        return f"{kept.mountpoint} holds {fstype}, not {kept.fstype}"
    if transport.run(["test", "-b", device.path], check=False).exit_status != 0:
        return f"{device.path} is not a block device on this host"
    node = transport.run(["readlink", "-f", "--", device.path]).stdout.strip()
    if node != kept.device_node or source != kept.device_node:
        return f"{kept.mountpoint} is mounted from {source}, the device is {node}, the setup was on {kept.device_node}"
    return ""


def kept_setup_problem(transport: Transport, kept: KeptSetup, device: DeviceIdentity) -> str:
    """Why the kept setup cannot be used on this host for `device` ("" if it can): it must still
    be mounted, from the same device, with the same filesystem and options, and hold the cluster."""
    mounts = _mounts_at(transport, kept.mountpoint)
    if not mounts:
        return f"{kept.mountpoint} is not mounted any more"
    if len(mounts) > 1:
        return f"{kept.mountpoint} is mounted {len(mounts)} times"
    source, _, fstype, options = mounts[0]
    if options != kept.mount_options:
        return f"{kept.mountpoint} is mounted with {options}, the kept setup had {kept.mount_options}"
    problem = _source_problem(transport, kept, device, source, fstype)
    if problem:
        return problem
    # The user's directory, looked at as the user.
    found = run_as_run_user(transport, ["test", "-f", f"{kept.data_dir}/PG_VERSION"], check=False)
    if found.exit_status != 0:
        return f"the cluster's data directory {kept.data_dir} is not there"
    return ""


def _storage_of(kept: KeptSetup) -> PreparedStorage:
    return PreparedStorage(
        mountpoint=kept.mountpoint,
        fstype=kept.fstype,
        device_node=kept.device_node,
        mount_options=kept.mount_options,
        mkfs_command=kept.mkfs_command,
        directory=kept.directory,
    )


@contextmanager
def reused_storage(transport: Transport, kept: KeptSetup) -> Iterator[PreparedStorage]:
    """The kept storage as this run's: released on the way out like a fresh run's, unless kept again."""
    with released_unless_kept(transport, _storage_of(kept)) as storage:
        yield storage


def discard_kept_setup(transport: Transport, kept: KeptSetup) -> None:
    """Stop the kept cluster if it runs, unmount, remove the mountpoint and a directory device's
    run directory. Idempotent: whatever is no longer there is skipped."""
    # Its PID from postmaster.pid, read and signalled as the run user only (postgres.stop).
    stop(transport, Cluster(bin_dir=kept.pg_bin_dir, base_dir=kept.base_dir, port=0))
    unmount_reliably(transport, kept.mountpoint)
    if kept.directory is not None:
        transport.run(["rm", "-rf", "--one-file-system", "--", kept.directory], check=False)


def _spec_difference(
    kept: KeptSetup, filesystem: FilesystemSpec, pg_bin_dir: str, init: InitOptions, database: str
) -> str:
    """Defence in depth: the service decides which runs share a setup, but a run never measures
    on a setup its own specification would not have made."""
    if filesystem.fstype != kept.fstype:
        return f"the run wants {filesystem.fstype}, the kept setup is {kept.fstype}"
    if kept.device_node is not None:
        mkfs = shlex.join([*MKFS_COMMAND[kept.fstype], *filesystem.mkfs_options, kept.device_node])
        if mkfs != kept.mkfs_command:
            return f"the run would make its filesystem with {mkfs}, the kept one was made with {kept.mkfs_command}"
    if pg_bin_dir != kept.pg_bin_dir:
        return f"the run uses PostgreSQL from {pg_bin_dir}, the kept cluster is {kept.pg_bin_dir}'s"
    if init.scale != kept.scale:
        return f"the run wants scale {init.scale}, the kept database has scale {kept.scale}"
    if database != kept.database:
        return f"the run uses the database {database}, the kept one is {kept.database}"
    return ""


def keep_setup(
    transport: Transport, storage: PreparedStorage, cluster: Cluster, database: str, scale: int
) -> KeptSetup | None:
    """After a run that succeeded: stop its cluster cleanly and leave the storage for the next
    run. None if that cannot be done (the storage is then released as usual)."""
    if not stop_fast(transport, cluster):  # a kept cluster must start again without recovery
        log.warning("not keeping %s: the cluster did not stop with pg_ctl stop -m fast", storage.mountpoint)
        return None
    try:
        kept = KeptSetup(
            mountpoint=storage.mountpoint,
            fstype=storage.fstype,
            device_node=storage.device_node,
            mount_options=storage.mount_options,
            mkfs_command=storage.mkfs_command,
            base_dir=cluster.base_dir,
            pg_bin_dir=cluster.bin_dir,
            database=database,
            scale=scale,
            directory=storage.directory,
        )
    except ValueError:
        log.exception("not keeping %s", storage.mountpoint)
        return None
    storage.keep = cluster.kept = True  # the cluster's way out must not discard it now
    return kept


def reused_database_note(transport: Transport, cluster: Cluster, kept: KeptSetup) -> str:
    """What the run records instead of `pgbench -i`'s output, once the database is found there."""
    try:
        psql(transport, cluster, "SELECT 1", database=kept.database)
    except CommandFailed as exc:
        raise LabError(f"the kept cluster at {kept.base_dir} has no usable database {kept.database}: {exc}") from exc
    return (
        f"reused the database {kept.database} (scale {kept.scale}) that an earlier run loaded "
        f"on {kept.mountpoint}: not created or loaded again\n"
    )


class Handover:
    """A kept setup given to a run, which either takes it over (its storage then goes the way
    of any run's storage) or discards it. Made by `handed_over`, which discards it if the run
    fails before doing either: a setup given to a run never outlives the run unless kept again."""

    def __init__(self, transport: Transport, kept: KeptSetup) -> None:
        self.transport, self.kept, self.settled = transport, kept, False

    def take_or_discard(
        self, device: DeviceIdentity, filesystem: FilesystemSpec, pg_bin_dir: str, init: InitOptions, database: str
    ) -> tuple[KeptSetup | None, str]:
        """The kept setup, checked against the run's specification and the host; or None and
        the reason it cannot be used (it has been discarded then: the run starts afresh)."""
        kept = self.kept
        reason = _spec_difference(kept, filesystem, pg_bin_dir, init, database)
        reason = reason or kept_setup_problem(self.transport, kept, device)
        self.settled = True  # (if the check itself failed, handed_over discards it on the way out)
        if not reason:
            return kept, ""
        log.info("not reusing the setup kept at %s: %s", kept.mountpoint, reason)
        try:
            discard_kept_setup(self.transport, kept)
        except LabError as exc:
            raise LabError(f"the kept setup could not be used ({reason}) nor removed: {exc}") from exc
        return None, reason


@contextmanager
def handed_over(transport: Transport, kept: KeptSetup) -> Iterator[Handover]:
    handover = Handover(transport, kept)
    try:
        yield handover
    except BaseException:
        if not handover.settled:
            try:
                discard_kept_setup(transport, kept)
            except LabError:  # the run's own error says more; this one goes to the log
                log.exception("could not discard the kept setup at %s", kept.mountpoint)
        raise
    if not handover.settled:
        discard_kept_setup(transport, kept)
