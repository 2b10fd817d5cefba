"""Is this device safe to wipe, is this directory safe to hold a run? Checked on the host
itself before anything is written (storage.prepared_storage calls these first).

A block device must be the one the inventory names (serial, size), marked wipeable, and neither
the system's disk, nor in /etc/fstab, nor mounted, swapped on or held by anything. A directory
device is checked against the directory rules (device_paths.py) after every symlink is resolved.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from runs.lab.errors import InvalidOption, SafetyCheckFailed
from runs.lab.storage.device_paths import check_block_device_path, check_directory_device_path
from runs.lab.transport.interface import Transport


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
