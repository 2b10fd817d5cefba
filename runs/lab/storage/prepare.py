"""The storage under test, as a run sets it up and releases it.

`prepared_storage` is the setup/cleanup pair a run uses: it refuses to format a device
unless every safety check holds (storage_checks.py), makes the filesystem, mounts it with validated options,
and on the way out — on every path, error or cancel — unmounts it again, unless the run
succeeded and kept it for the next run of the same setup (`PreparedStorage.keep`, kept.py).
"""

import re
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from runs.lab.errors import InvalidOption
from runs.lab.options import FILESYSTEMS, parse_mkfs_options, parse_mount_options
from runs.lab.storage.checks import DeviceIdentity, device_assert_wipeable, resolved_device_directory
from runs.lab.storage.mounts import MOUNT_ROOT, make_mountpoint, mount_filesystem, mounted_options, unmount_reliably
from runs.lab.transport.interface import Transport

# Always non-interactive; quiet where the tool allows it.
MKFS_COMMAND = {"ext4": ["mkfs.ext4", "-F", "-q"], "xfs": ["mkfs.xfs", "-f", "-q"], "btrfs": ["mkfs.btrfs", "-f", "-q"]}


@dataclass(frozen=True)
class FilesystemSpec:
    fstype: str
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()


@dataclass
class PreparedStorage:
    mountpoint: str
    fstype: str
    device_node: str | None  # /dev/loop3 etc.; None for directories and tmpfs
    mount_options: str  # as /proc/mounts shows them
    mkfs_command: str = ""
    directory: str | None = None  # a directory device's run directory (bind-mounted at mountpoint)
    # PIDs of processes benchlab started as its unprivileged user that use the mount: the only
    # ones it may stop (as that user).
    own_pids: list[int] = field(default_factory=list)
    # Set by a run that succeeded and stopped its cluster cleanly: the cleanup then leaves the
    # storage mounted, data and all, for the next run of the same setup (kept.py).
    keep: bool = False


def mountpoint_for(run_key: str, identity: DeviceIdentity) -> str:
    """Where the run's storage appears: always under /mnt/benchlab, which postgres can reach
    (a directory device may sit below a directory it cannot enter, like /root)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", run_key):
        raise InvalidOption(f"bad run key {run_key!r}")
    return f"{MOUNT_ROOT}/benchlab-{run_key}"


def directory_for(run_key: str, directory: str) -> str:
    """The run's own directory on a directory-backed device (bind-mounted at the mountpoint)."""
    return f"{directory.rstrip('/')}/benchlab-{run_key}"


def release_storage(transport: Transport, storage: PreparedStorage) -> None:
    """Unmount, remove the mountpoint and a directory device's run directory (once unmounted)."""
    unmount_reliably(transport, storage.mountpoint, storage.own_pids)
    if storage.device_node is not None:
        # A write-back error nobody has been told of yet (the device failed under the run, and the
        # unmount could not write) goes to the next program that opens the device and syncs it:
        # the next run's mkfs, failing on this run's error. Taken here, where it belongs (a
        # healthy device syncs at once: nothing is left to write once it is unmounted).
        transport.run(["sync", storage.device_node], check=False)
    if storage.directory is not None:
        transport.run(["rm", "-rf", "--one-file-system", "--", storage.directory], check=False)


@contextmanager
def released_unless_kept(transport: Transport, storage: PreparedStorage) -> Iterator[PreparedStorage]:
    """Release the storage on the way out, unless the run set storage.keep and nothing failed
    after that (on any error, even in a later cleanup step, it is released)."""
    try:
        yield storage
    except BaseException:
        release_storage(transport, storage)
        raise
    if not storage.keep:
        release_storage(transport, storage)


@contextmanager
def prepared_storage(
    transport: Transport,
    identity: DeviceIdentity,
    filesystem: FilesystemSpec,
    run_key: str,
    before_mkfs: Callable[[str], None] | None = None,
) -> Iterator[PreparedStorage]:
    """Setup: check, mkfs, mount. Cleanup (always, unless kept): unmount, remove the mountpoint.

    `before_mkfs` hears the mkfs command line once every check has passed, just before it
    runs (the audit log records it then: a formatted device is a fact even if the run fails)."""
    mountpoint = mountpoint_for(run_key, identity)
    fstype = filesystem.fstype
    if fstype not in FILESYSTEMS:
        raise InvalidOption(f"unknown filesystem {fstype!r}")
    parse_mount_options(fstype, ",".join(filesystem.mount_options))

    if fstype == "directory":
        if not identity.is_directory:
            raise InvalidOption(f"{identity.path} is a block device; pick a filesystem to create on it")
        # The data lives in the device's directory; a bind mount shows it where postgres can reach it.
        directory = directory_for(run_key, resolved_device_directory(transport, identity))
        # Not -p: a path already there (a symlink planted in a shared directory) is refused.
        transport.run(["mkdir", "-m", "0755", directory])
        storage = PreparedStorage(mountpoint, fstype, device_node=None, mount_options="", directory=directory)
        with released_unless_kept(transport, storage):
            make_mountpoint(transport, mountpoint)
            transport.run(["mount", "--bind", directory, mountpoint])
            storage.mount_options = mounted_options(transport, mountpoint)
            yield storage
        return

    if fstype == "tmpfs":
        source, node, mkfs_command = "tmpfs", None, ""
    else:
        if identity.is_directory:
            raise InvalidOption(f"{identity.path} is a directory; {fstype} needs a block device")
        parse_mkfs_options(fstype, shlex.join(filesystem.mkfs_options))
        node = device_assert_wipeable(transport, identity)
        mkfs = [*MKFS_COMMAND[fstype], *filesystem.mkfs_options, node]
        if before_mkfs is not None:
            before_mkfs(shlex.join(mkfs))
        transport.run(mkfs, timeout=600)
        source, mkfs_command = node, shlex.join(mkfs)
    storage = PreparedStorage(
        mountpoint=mountpoint, fstype=fstype, device_node=node, mount_options="", mkfs_command=mkfs_command
    )
    with released_unless_kept(transport, storage):
        # Inside: a mount that succeeded but could not be read back is still undone.
        storage.mount_options = mount_filesystem(transport, source, mountpoint, fstype, filesystem.mount_options)
        yield storage
