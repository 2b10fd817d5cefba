"""The storage under test: safety checks, mkfs, mount and a reliable unmount.

`prepared_storage` is the setup/cleanup pair a run uses: it refuses to format a device
unless every safety check holds, makes the filesystem, mounts it with validated options,
and on the way out — on every path, error or cancel — unmounts it again, unless the run
succeeded and kept it for the next run of the same setup (`PreparedStorage.keep`, kept.py).
"""

import json
import re
import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from runs.lab.device_paths import check_block_device_path, check_directory_device_path
from runs.lab.errors import CommandFailed, InvalidOption, LabError, SafetyCheckFailed
from runs.lab.options import BLOCK_FILESYSTEMS as BLOCK_FILESYSTEMS  # re-exported: checked without a host
from runs.lab.options import FILESYSTEMS as FILESYSTEMS
from runs.lab.options import MKFS_OPTIONS as MKFS_OPTIONS
from runs.lab.options import MOUNT_OPTIONS as MOUNT_OPTIONS
from runs.lab.options import parse_mkfs_options as parse_mkfs_options
from runs.lab.options import parse_mount_options as parse_mount_options
from runs.lab.run_user import signal_as_run_user
from runs.lab.transport import Transport

MOUNT_ROOT = "/mnt/benchlab"
# Always non-interactive; quiet where the tool allows it.
MKFS_COMMAND = {"ext4": ["mkfs.ext4", "-F", "-q"], "xfs": ["mkfs.xfs", "-f", "-q"], "btrfs": ["mkfs.btrfs", "-f", "-q"]}


@dataclass(frozen=True)
class DeviceIdentity:
    """What the inventory records about a device (the lab layer does not read the database)."""

    path: str
    wipe_allowed: bool = False
    serial: str = ""
    size_bytes: int | None = None
    # Directories that hold benchlab's own data: a directory device may be none of them, nor
    # hold one (the caller knows them; the lab layer does not).
    protected_dirs: tuple[str, ...] = ()

    @property
    def is_directory(self) -> bool:
        return not self.path.startswith("/dev/")


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


# ---- safety checks ------------------------------------------------------------------------


@dataclass(frozen=True)
class _BlockFacts:
    node: str
    lsblk: dict[str, object]
    fstab: str
    swaps: str
    system_sources: list[str]  # what /, /boot, /boot/efi are mounted from
    ids: set[str]  # UUID=…, LABEL=…, PARTUUID=… of the device and its partitions


def _tree(device: dict[str, object]) -> Iterator[dict[str, object]]:
    yield device
    for child in device.get("children", []) or []:  # type: ignore[attr-defined]
        yield from _tree(child)


def _resolve(transport: Transport, path: str) -> str:
    return transport.run(["readlink", "-f", path]).stdout.strip()


def _gather_block_facts(transport: Transport, identity: DeviceIdentity) -> _BlockFacts:
    exists = transport.run(["test", "-b", identity.path], check=False)
    if exists.exit_status != 0:
        raise SafetyCheckFailed("identity", f"{identity.path} is not a block device on this host")
    node = _resolve(transport, identity.path)
    columns = "NAME,KNAME,PATH,SIZE,SERIAL,MODEL,TYPE,MOUNTPOINTS,FSTYPE,UUID,LABEL,PARTUUID,PARTLABEL"
    tree = json.loads(transport.run(["lsblk", "-J", "-b", "-o", columns, node]).stdout)["blockdevices"][0]
    ids = set()
    for part in _tree(tree):
        for key in ("uuid", "label", "partuuid", "partlabel"):
            if part.get(key):
                ids.add(f"{key.upper()}={part[key]}")
        # lsblk knows labels and UUIDs only from udev; ask the device itself too.
        probed = transport.run(["blkid", "-p", "-o", "export", str(part["path"])], check=False).stdout
        for line in probed.splitlines():
            key, _, value = line.partition("=")
            key = {"PART_ENTRY_UUID": "PARTUUID", "PART_ENTRY_NAME": "PARTLABEL"}.get(key, key)
            if key in ("UUID", "LABEL", "PARTUUID", "PARTLABEL") and value:
                ids.add(f"{key}={value}")
    system_sources = []
    for target in ("/", "/boot", "/boot/efi"):
        found = transport.run(["findmnt", "-n", "-o", "SOURCE", "--target", target], check=False).stdout.strip()
        if found.startswith("/dev/"):
            system_sources.append(_resolve(transport, re.sub(r"\[.*\]$", "", found)))
    return _BlockFacts(
        node=node,
        lsblk=tree,
        fstab=transport.run(["cat", "/etc/fstab"], check=False).stdout,
        swaps=transport.run(["cat", "/proc/swaps"], check=False).stdout,
        system_sources=system_sources,
        ids=ids,
    )


def _check_identity(identity: DeviceIdentity, facts: _BlockFacts) -> None:
    if not identity.serial and identity.size_bytes is None:
        raise SafetyCheckFailed("identity", "the inventory records neither serial nor size for this device")
    serial = str(facts.lsblk.get("serial") or "")
    if identity.serial and serial != identity.serial:
        raise SafetyCheckFailed(
            "identity", f"{facts.node} has serial {serial!r}, the inventory says {identity.serial!r}"
        )
    size = int(str(facts.lsblk.get("size") or 0))
    if identity.size_bytes is not None and size != identity.size_bytes:
        raise SafetyCheckFailed("identity", f"{facts.node} has {size} bytes, the inventory says {identity.size_bytes}")


def _check_not_in_use(transport: Transport, facts: _BlockFacts) -> None:
    for part in _tree(facts.lsblk):
        mounts = [m for m in part.get("mountpoints", []) or [] if m]  # type: ignore[attr-defined]
        if mounts:
            raise SafetyCheckFailed("not mounted", f"{part['path']} is mounted at {', '.join(mounts)}")
        # By kernel name (a /dev/mapper/x device is dm-N in sysfs); unreadable counts as held.
        listing = transport.run(["ls", f"/sys/class/block/{part.get('kname') or part['name']}/holders"], check=False)
        if listing.exit_status != 0:
            raise SafetyCheckFailed(
                "no holders", f"cannot read the holders of {part['path']}: {listing.stderr.strip()}"
            )
        holders = listing.stdout.split()
        if holders:
            raise SafetyCheckFailed("no holders", f"{part['path']} is held by {', '.join(holders)}")


def _check_not_system(transport: Transport, facts: _BlockFacts) -> None:
    # Both names: / on LVM is mounted from /dev/dm-N, which lsblk calls /dev/mapper/….
    paths = {str(part["path"]) for part in _tree(facts.lsblk)}
    paths |= {f"/dev/{part['kname']}" for part in _tree(facts.lsblk) if part.get("kname")}
    for source in facts.system_sources:
        if source in paths:
            raise SafetyCheckFailed("not a system device", f"{source} holds the root or boot filesystem")
    for line in facts.swaps.splitlines()[1:]:
        swap = line.split()[0] if line.split() else ""
        if swap in paths or (swap.startswith("/dev/") and _resolve(transport, swap) in paths):
            raise SafetyCheckFailed("not a system device", f"{swap} is in use as swap")


def _check_not_in_fstab(transport: Transport, identity: DeviceIdentity, facts: _BlockFacts) -> None:
    paths = {str(part["path"]) for part in _tree(facts.lsblk)}
    for line in facts.fstab.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        source = fields[0]
        listed = source in facts.ids or source == identity.path
        if not listed and source.startswith("/dev/"):
            listed = _resolve(transport, source) in paths
        if listed:
            raise SafetyCheckFailed("not in /etc/fstab", f"/etc/fstab mounts it: {line.strip()}")


def device_assert_wipeable(transport: Transport, identity: DeviceIdentity) -> str:
    """Refuse (SafetyCheckFailed naming the check) unless the device may be formatted.

    Returns the device node the stable path resolves to.
    """
    if not identity.wipe_allowed:
        raise SafetyCheckFailed("wipe allowed", f"the inventory does not allow wiping {identity.path}")
    try:
        check_block_device_path(identity.path)
    except InvalidOption as exc:
        raise SafetyCheckFailed("stable path", str(exc)) from None
    facts = _gather_block_facts(transport, identity)
    # The most telling reason first: a system disk is also mounted, but "system" says more.
    _check_identity(identity, facts)
    _check_not_system(transport, facts)
    _check_not_in_fstab(transport, identity, facts)
    _check_not_in_use(transport, facts)
    return facts.node


# ---- mkfs, mount, unmount -----------------------------------------------------------------


def kernel_log_cursor(transport: Transport) -> float:
    """Where the kernel's log ends now: what is logged later has a later timestamp."""
    lines = transport.run(["dmesg"], check=False).stdout.splitlines()
    return dmesg_time(lines[-1]) if lines else 0.0


def dmesg_time(line: str) -> float:
    match = re.match(r"\[\s*(\d+\.\d+)\]", line)
    return float(match.group(1)) if match else 0.0


def dmesg_message(line: str) -> str:
    """The line without its timestamp."""
    return re.sub(r"^\[\s*\d+\.\d+\]\s*", "", line)


def kernel_log_since(transport: Transport, since: float) -> list[str]:
    """The kernel's log lines (as `dmesg` prints them) written after the cursor `since`."""
    return [line for line in transport.run(["dmesg"], check=False).stdout.splitlines() if dmesg_time(line) > since]


def _kernel_reason(transport: Transport, since: float, fstype: str, node: str) -> str:
    """The kernel's own words about a failed mount, from the log lines written since `since`."""
    device = node.rsplit("/", 1)[-1]
    relevant = [
        dmesg_message(line)
        for line in kernel_log_since(transport, since)
        if device in line or fstype.lower() in line.lower() or "parameter" in line.lower()
    ]
    return "; ".join(relevant[-5:])


def mount_filesystem(transport: Transport, source: str, mountpoint: str, fstype: str, options: Sequence[str]) -> str:
    """Mount and return the options as /proc/mounts shows them (not as requested)."""
    make_mountpoint(transport, mountpoint)
    cursor = kernel_log_cursor(transport)
    argv = ["mount", "-t", fstype, *(["-o", ",".join(options)] if options else []), source, mountpoint]
    result = transport.run(argv, check=False)
    if result.exit_status != 0:
        time.sleep(0.2)  # let the kernel's message reach the log
        reason = _kernel_reason(transport, cursor, fstype, source)
        message = result.stderr.strip() + (f" — kernel: {reason}" if reason else "")
        raise CommandFailed(" ".join(argv), result.exit_status, result.stdout, message, transport.label)
    return mounted_options(transport, mountpoint)


def _mount_table(transport: Transport) -> list[list[str]]:
    """The kernel's mount table (source, mountpoint, type, options, ...) of the host's namespace."""
    lines = transport.run(["cat", "/proc/mounts"]).stdout.splitlines()
    return [fields for fields in (line.split() for line in lines) if len(fields) >= 4]


def mounted_options(transport: Transport, mountpoint: str) -> str:
    for fields in _mount_table(transport):
        if fields[1] == mountpoint:
            return fields[3]
    raise LabError(f"{mountpoint} is not in /proc/mounts after mounting")


def is_mounted(transport: Transport, mountpoint: str) -> bool:
    """From the mount table, not by looking at the directory: a filesystem shut down after an
    I/O error (xfs) fails every stat of its root, and `mountpoint` then says "not a mountpoint"."""
    return any(fields[1] == mountpoint for fields in _mount_table(transport))


def _signal_own(transport: Transport, pid: int, signal_name: str) -> bool:
    """Signal the process group `pid` leads (pgbench's wrapper and pg_ctl's postmaster both lead
    one), or the single process if it leads none. True if something was there to signal.

    As benchlab's unprivileged user, who runs them: their PIDs come from files that user
    writes, and a forged one must not reach anybody else's process."""
    return signal_as_run_user(transport, f"-{pid}", signal_name) or signal_as_run_user(transport, str(pid), signal_name)


def stop_own_processes(transport: Transport, pids: Sequence[int], grace_seconds: float = 10.0) -> None:
    """SIGTERM then SIGKILL the given PIDs (the run's own) and their groups, never anything found by name."""
    alive = [pid for pid in pids if _signal_own(transport, pid, "TERM")]
    deadline = time.monotonic() + grace_seconds
    while alive and time.monotonic() < deadline:
        time.sleep(0.5)
        alive = [pid for pid in alive if _signal_own(transport, pid, "0")]
    for pid in alive:
        _signal_own(transport, pid, "KILL")


def unmount_reliably(
    transport: Transport, mountpoint: str, own_pids: Sequence[int] = (), attempts: int = 20, pause: float = 0.5
) -> None:
    """Unmount, retrying while busy; if still busy, stop our own processes and retry."""
    for attempt in range(attempts):
        if not is_mounted(transport, mountpoint):
            break
        result = transport.run(["umount", mountpoint], check=False)
        if result.exit_status == 0:
            break
        if attempt == attempts // 2 and own_pids:
            stop_own_processes(transport, own_pids)
        time.sleep(pause)
    else:
        users = transport.run(["fuser", "-vm", mountpoint], check=False)
        raise LabError(f"cannot unmount {mountpoint}: still busy\n{users.stderr.strip()}")
    transport.run(["rmdir", mountpoint], check=False)


def make_mountpoint(transport: Transport, mountpoint: str) -> None:
    # Each level 0755 whatever root's umask: the run's user must reach its cluster below it.
    transport.run(["install", "-d", "-m", "0755", MOUNT_ROOT, mountpoint])


def mountpoint_for(run_key: str, identity: DeviceIdentity) -> str:
    """Where the run's storage appears: always under /mnt/benchlab, which postgres can reach
    (a directory device may sit below a directory it cannot enter, like /root)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", run_key):
        raise InvalidOption(f"bad run key {run_key!r}")
    return f"{MOUNT_ROOT}/benchlab-{run_key}"


def directory_for(run_key: str, directory: str) -> str:
    """The run's own directory on a directory-backed device (bind-mounted at the mountpoint)."""
    return f"{directory.rstrip('/')}/benchlab-{run_key}"


def resolved_device_directory(transport: Transport, identity: DeviceIdentity) -> str:
    """The device's directory with every symlink resolved on the host, checked against the
    directory rules (device_paths.py) as the host sees it: a link into /etc is /etc."""
    check_directory_device_path(identity.path, identity.protected_dirs)
    found = transport.run(["realpath", "-e", "--", identity.path], check=False)
    if found.exit_status != 0:
        raise InvalidOption(f"the device's directory {identity.path} does not exist on {transport.label}")
    resolved = found.stdout.strip()
    check_directory_device_path(resolved, identity.protected_dirs)
    if transport.run(["test", "-d", resolved], check=False).exit_status != 0:
        raise InvalidOption(f"the device's path {identity.path} is not a directory on {transport.label}")
    return resolved


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
