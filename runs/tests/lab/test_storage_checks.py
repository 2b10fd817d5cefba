"""device_assert_wipeable against a fake host: one refusal per test, each naming its check.

The fake answers only the read-only commands the checks run (readlink, test -b, lsblk,
blkid -p, findmnt, cat, ls) from a small model of a host; any other command fails the test. Its
lsblk answers are shaped like util-linux 2.38's `lsblk -J -b -o NAME,PATH,SIZE,...` output
and contain only the columns asked for.

The host: /dev/sda is the system disk (EFI on sda1, / on sda2, swap on sda3); /dev/sdb is
the disk under test, reached through its /dev/disk/by-id link, with two unused partitions.
Each scenario breaks exactly one check, so the expected check name does not depend on the
order device_assert_wipeable runs them in.
"""

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import pytest

from runs.lab.errors import CommandFailed, SafetyCheckFailed
from runs.lab.storage.checks import DeviceIdentity, device_assert_wipeable
from runs.lab.transport.interface import Command, CommandResult, Transport

SERIAL = "ZA1B2C3D"
SIZE = 4_000_787_030_016
BY_ID = "/dev/disk/by-id/ata-ST4000NM0035-1V4107_ZA1B2C3D"
SDB1_UUID = "3f1c9a0e-7d2b-4c1e-9f51-0b6a2d7e8c41"
SDB1_PARTUUID = "8a2fd4c1-01"
SDB2_UUID = "0c6e2b8a-54f3-4a8e-a1d2-77e0c3b9f6a5"


def _part(name: str, size: int, **facts: object) -> dict[str, object]:
    return {
        "name": name,
        "path": f"/dev/{name}",
        "size": size,
        "serial": None,
        "model": None,
        "type": "part",
        "mountpoints": [None],
        "fstype": None,
        "uuid": None,
        "label": None,
        "partuuid": None,
        "partlabel": None,
        **facts,
    }


def _disk(name: str, size: int, serial: str, model: str, children: list[dict[str, object]]) -> dict[str, object]:
    disk = _part(name, size, serial=serial, model=model, type="disk")
    if children:
        disk["children"] = children
    return disk


def _system_disk() -> dict[str, object]:
    return _disk(
        "sda",
        512_110_190_592,
        "S4EWNX0R654321",
        "Samsung SSD 860 EVO 500GB",
        [
            _part("sda1", 536_870_912, mountpoints=["/boot/efi"], fstype="vfat", uuid="6A1B-2C3D"),
            _part(
                "sda2", 494_927_495_168, mountpoints=["/"], fstype="ext4", uuid="b1f0a2c4-1111-4222-8333-944455556666"
            ),
            _part(
                "sda3",
                16_645_824_512,
                mountpoints=["[SWAP]"],
                fstype="swap",
                uuid="c2e1b3d5-aaaa-4bbb-8ccc-ddddeeeeffff",
            ),
        ],
    )


def _disk_under_test() -> dict[str, object]:
    return _disk(
        "sdb",
        SIZE,
        SERIAL,
        "ST4000NM0035-1V4107",
        [
            _part(
                "sdb1",
                2_000_397_795_328,
                fstype="ext4",
                uuid=SDB1_UUID,
                label="bench",
                partuuid=SDB1_PARTUUID,
                partlabel="benchdata",
            ),
            _part("sdb2", 2_000_388_358_144, fstype="xfs", uuid=SDB2_UUID, partuuid="8a2fd4c1-02"),
        ],
    )


CLEAN_FSTAB = """\
# /etc/fstab: static file system information.
#
# <file system> <mount point>   <type>  <options>       <dump>  <pass>
UUID=b1f0a2c4-1111-4222-8333-944455556666 /               ext4    errors=remount-ro 0       1
UUID=6A1B-2C3D  /boot/efi       vfat    umask=0077      0       1
UUID=c2e1b3d5-aaaa-4bbb-8ccc-ddddeeeeffff none            swap    sw              0       0
# /dev/sdb1 /srv/old ext4 defaults 0 2  (retired)
tmpfs /tmp tmpfs defaults,size=2g 0 0
"""

CLEAN_SWAPS = """\
Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority
/dev/sda3                               partition\t16255684\t0\t\t-2
"""

READ_ONLY_PROGRAMS = {"readlink", "test", "lsblk", "blkid", "findmnt", "cat", "ls"}


@dataclass
class FakeHost(Transport):
    """A lab host as the safety checks see it; tests change one fact each."""

    disks: list[dict[str, object]] = field(default_factory=lambda: [_system_disk(), _disk_under_test()])
    links: dict[str, str] = field(
        default_factory=lambda: {
            BY_ID: "../../sdb",
            f"{BY_ID}-part1": "../../sdb1",
            f"/dev/disk/by-uuid/{SDB1_UUID}": "../../sdb1",
            f"/dev/disk/by-partuuid/{SDB1_PARTUUID}": "../../sdb1",
            "/dev/disk/by-label/bench": "../../sdb1",
            "/dev/root": "sda2",
        }
    )
    # findmnt -n -o SOURCE --target <path>: the source of the filesystem holding <path>.
    mounts: dict[str, str] = field(default_factory=lambda: {"/": "/dev/sda2", "/boot/efi": "/dev/sda1"})
    fstab: str = CLEAN_FSTAB
    swaps: str = CLEAN_SWAPS
    holders: dict[str, list[str]] = field(default_factory=dict)
    label: str = "lab1"
    calls: list[list[str]] = field(default_factory=list)

    def nodes(self) -> Iterator[dict[str, object]]:
        def walk(device: dict[str, object]) -> Iterator[dict[str, object]]:
            yield device
            for child in device.get("children", []):  # type: ignore[attr-defined]
                yield from walk(child)

        for disk in self.disks:
            yield from walk(disk)

    def resolve(self, path: str) -> str:
        """readlink -f: follow the fake's symlinks; an unknown path resolves to itself."""
        for _ in range(10):
            if path not in self.links:
                return path
            path = os.path.normpath(os.path.join(os.path.dirname(path), self.links[path]))
        raise AssertionError(f"symlink loop at {path}")

    def node(self, path: str) -> dict[str, object] | None:
        return next((device for device in self.nodes() if device["path"] == path), None)

    def mount_source(self, target: str) -> str:
        while target not in self.mounts:
            target = os.path.dirname(target)
        return self.mounts[target]

    def answer(self, argv: list[str]) -> tuple[int, str, str]:
        match argv:
            case ["readlink", "-f", path]:
                return 0, self.resolve(path) + "\n", ""
            case ["test", "-b", path]:
                return (0 if self.node(self.resolve(path)) else 1), "", ""
            case ["lsblk", "-J", "-b", "-o", columns, path]:
                device = self.node(self.resolve(path))
                if device is None:
                    return 32, "", f"lsblk: {path}: not a block device\n"
                wanted = [column.lower() for column in columns.split(",")]
                return 0, json.dumps({"blockdevices": [_columns(device, wanted)]}, indent=3) + "\n", ""
            case ["findmnt", "-n", "-o", "SOURCE", "--target", target]:
                return 0, self.mount_source(target) + "\n", ""
            case ["blkid", "-p", "-o", "export", path]:
                device = self.node(self.resolve(path))
                if device is None:
                    return 2, "", ""
                return 0, _blkid_export(device), ""
            case ["cat", "/etc/fstab"]:
                return 0, self.fstab, ""
            case ["cat", "/proc/swaps"]:
                return 0, self.swaps, ""
            case ["ls", holders] if holders.startswith("/sys/class/block/") and holders.endswith("/holders"):
                name = holders.removeprefix("/sys/class/block/").removesuffix("/holders")
                if not any(device["name"] == name for device in self.nodes()):
                    return 2, "", f"ls: cannot access '{holders}': No such file or directory\n"
                return 0, "".join(f"{holder}\n" for holder in self.holders.get(name, [])), ""
        raise AssertionError(f"the fake host does not expect {argv}")

    # The Transport.

    def execute(self, command: Command) -> CommandResult:
        argv = list(command.argv)
        self.calls.append(argv)
        assert argv[0] in READ_ONLY_PROGRAMS, f"a safety check ran {argv}"
        status, stdout, stderr = self.answer(argv)
        if command.check and status != 0:
            raise CommandFailed(command.line, status, stdout, stderr, self.label)
        return CommandResult(command=command.line, exit_status=status, stdout=stdout, stderr=stderr)

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        raise AssertionError("the safety checks must not write files")

    def close(self) -> None:
        pass


def _columns(device: dict[str, object], wanted: list[str]) -> dict[str, object]:
    shown = {column: device.get(column) for column in wanted}
    children = device.get("children")
    if children:
        shown["children"] = [_columns(child, wanted) for child in children]  # type: ignore[attr-defined]
    return shown


def _blkid_export(device: dict[str, object]) -> str:
    """`blkid -p -o export` of a device: what its superblock and partition entry say."""
    facts = {"DEVNAME": device["path"]}
    if device.get("children"):
        facts |= {"PTUUID": "8a2fd4c1", "PTTYPE": "gpt"}
    facts |= {"UUID": device.get("uuid"), "LABEL": device.get("label"), "TYPE": device.get("fstype")}
    if device["type"] == "part":
        facts |= {"PART_ENTRY_SCHEME": "gpt", "PART_ENTRY_NAME": device.get("partlabel")}
        facts |= {"PART_ENTRY_UUID": device.get("partuuid"), "PART_ENTRY_NUMBER": str(device["name"])[-1]}
    return "".join(f"{key}={value}\n" for key, value in facts.items() if value)


def identity(**changes: object) -> DeviceIdentity:
    facts: dict[str, object] = {"path": BY_ID, "wipe_allowed": True, "serial": SERIAL, "size_bytes": SIZE}
    return DeviceIdentity(**(facts | changes))  # type: ignore[arg-type]


def sdb(host: FakeHost, name: str = "sdb") -> dict[str, object]:
    device = host.node(f"/dev/{name}")
    assert device is not None
    return device


def refused(host: FakeHost, device: DeviceIdentity) -> SafetyCheckFailed:
    with pytest.raises(SafetyCheckFailed) as info:
        device_assert_wipeable(host, device)
    return info.value


# --- the clean case ------------------------------------------------------------------------------


def test_it_accepts_a_clean_device_and_returns_its_node() -> None:
    host = FakeHost()

    assert device_assert_wipeable(host, identity()) == "/dev/sdb"
    assert [call[-1] for call in host.calls if call[0] == "lsblk"] == ["/dev/sdb"]


@pytest.mark.parametrize("device", [identity(size_bytes=None), identity(serial="")], ids=["serial-only", "size-only"])
def test_it_accepts_a_device_identified_by_serial_or_size_alone(device: DeviceIdentity) -> None:
    assert device_assert_wipeable(FakeHost(), device) == "/dev/sdb"


def test_it_accepts_a_loop_device_without_partitions_or_serial_by_its_stable_link() -> None:
    host = FakeHost()
    host.disks.append(_disk("loop3", 2_147_483_648, "", "", []) | {"type": "loop", "serial": None, "model": None})
    host.links["/dev/disk/by-id/benchlab-loop3"] = "../../loop3"

    device = identity(path="/dev/disk/by-id/benchlab-loop3", serial="", size_bytes=2_147_483_648)

    assert device_assert_wipeable(host, device) == "/dev/loop3"


@pytest.mark.parametrize(
    "path", ["/dev/sdb", "/dev/loop3", "/dev/disk/by-id/../../sdb", f"{BY_ID}/", "/srv/bench", "/dev/null"]
)
def test_it_refuses_a_path_that_is_not_a_stable_block_device_link_before_looking_at_the_host(path: str) -> None:
    host = FakeHost()

    failure = refused(host, identity(path=path))

    assert failure.check == "stable path"
    assert path in failure.detail
    assert host.calls == []


# --- wipe allowed --------------------------------------------------------------------------------


def test_it_refuses_a_device_not_allowed_to_be_wiped_without_running_anything() -> None:
    host = FakeHost()

    failure = refused(host, identity(wipe_allowed=False))

    assert failure.check == "wipe allowed"
    assert BY_ID in failure.detail
    assert host.calls == []


# --- identity ------------------------------------------------------------------------------------


def test_it_refuses_a_device_with_neither_serial_nor_size_recorded() -> None:
    failure = refused(FakeHost(), identity(serial="", size_bytes=None))

    assert failure.check == "identity"
    assert "neither serial nor size" in failure.detail


def test_it_refuses_a_device_of_another_size() -> None:
    failure = refused(FakeHost(), identity(size_bytes=SIZE - 512))

    assert failure.check == "identity"
    assert str(SIZE) in failure.detail and str(SIZE - 512) in failure.detail


def test_it_refuses_a_device_with_another_serial() -> None:
    host = FakeHost()
    sdb(host)["serial"] = "ZA9Z9Z9Z"  # the disk was swapped; the by-id link now points at the new one

    failure = refused(host, identity())

    assert failure.check == "identity"
    assert "'ZA9Z9Z9Z'" in failure.detail and f"'{SERIAL}'" in failure.detail


def test_it_refuses_a_device_without_a_serial_when_one_is_recorded() -> None:
    host = FakeHost()
    sdb(host)["serial"] = None

    assert refused(host, identity()).check == "identity"


@pytest.mark.parametrize("path", [f"{BY_ID}-gone", "/dev/disk/by-id/not-a-disk"])
def test_it_refuses_a_path_that_is_not_a_block_device(path: str) -> None:
    host = FakeHost()

    failure = refused(host, identity(path=path))

    assert failure.check == "identity"
    assert path in failure.detail
    assert not any(call[0] == "lsblk" for call in host.calls)


# --- not mounted ---------------------------------------------------------------------------------


def test_it_refuses_a_mounted_partition() -> None:
    host = FakeHost()
    sdb(host, "sdb2")["mountpoints"] = ["/srv/scratch"]

    failure = refused(host, identity())

    assert failure.check == "not mounted"
    assert "/dev/sdb2" in failure.detail and "/srv/scratch" in failure.detail


def test_it_refuses_a_disk_mounted_without_partitions() -> None:
    host = FakeHost()
    disk = sdb(host)
    del disk["children"]
    disk["mountpoints"] = ["/srv/old", "/var/lib/old"]

    failure = refused(host, identity())

    assert failure.check == "not mounted"
    assert "/srv/old" in failure.detail and "/var/lib/old" in failure.detail


# --- no holders ----------------------------------------------------------------------------------


@pytest.mark.parametrize("holders", [["md127"], ["dm-3", "dm-4"]])
def test_it_refuses_a_partition_with_holders(holders: list[str]) -> None:
    host = FakeHost(holders={"sdb1": holders})

    failure = refused(host, identity())

    assert failure.check == "no holders"
    assert "/dev/sdb1" in failure.detail and all(holder in failure.detail for holder in holders)


def test_it_refuses_a_disk_with_holders() -> None:
    host = FakeHost(holders={"sdb": ["dm-0"]})

    assert refused(host, identity()).check == "no holders"


# --- not in /etc/fstab ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "/dev/sdb1",
        "/dev/sdb",
        f"UUID={SDB1_UUID}",
        f"UUID={SDB2_UUID}",
        f"PARTUUID={SDB1_PARTUUID}",
        "LABEL=bench",
        f"{BY_ID}-part1",
        BY_ID,
        f"/dev/disk/by-uuid/{SDB1_UUID}",
        "/dev/disk/by-label/bench",
    ],
)
def test_it_refuses_a_device_listed_in_fstab(source: str) -> None:
    line = f"{source}  /srv/data  ext4  defaults,noauto  0  2"
    host = FakeHost(fstab=CLEAN_FSTAB + line + "\n")

    failure = refused(host, identity())

    assert failure.check == "not in /etc/fstab"
    assert line in failure.detail


def test_it_refuses_a_device_listed_in_fstab_by_partlabel() -> None:
    host = FakeHost(fstab=CLEAN_FSTAB + "PARTLABEL=benchdata /srv/data ext4 defaults 0 2\n")

    try:
        device_assert_wipeable(host, identity())
    except SafetyCheckFailed as failure:
        assert failure.check == "not in /etc/fstab"
    else:
        raise AssertionError(
            "regressed: runs/lab/storage/prepare.py _gather_block_facts: ids hold only UUID=, LABEL= and PARTUUID="
            " (lsblk is not asked for PARTLABEL, blkid's PART_ENTRY_NAME is not mapped), so an fstab line with"
            " PARTLABEL= — which fstab(5) supports — naming a partition of the device is not seen"
        )


# --- not a system device -------------------------------------------------------------------------
# lsblk shows these partitions unmounted (as it does from another mount namespace), so only
# findmnt and /proc/swaps tell.


@pytest.mark.parametrize(
    ("target", "source"),
    [
        ("/", "/dev/sdb2"),
        ("/", "/dev/sdb2[/@rootfs]"),
        ("/", f"/dev/disk/by-id/ata-ST4000NM0035-1V4107_{SERIAL}-part1"),
        ("/boot", "/dev/sdb1"),
        ("/boot/efi", "/dev/sdb1"),
    ],
)
def test_it_refuses_the_device_holding_the_root_or_boot_filesystem(target: str, source: str) -> None:
    host = FakeHost()
    host.mounts[target] = source

    failure = refused(host, identity())

    assert failure.check == "not a system device"


@pytest.mark.parametrize("listed", ["/dev/sdb2", f"{BY_ID}-part1"])
def test_it_refuses_a_device_used_as_swap(listed: str) -> None:
    host = FakeHost(swaps=CLEAN_SWAPS + f"{listed}                               partition\t8388604\t0\t\t-3\n")

    failure = refused(host, identity())

    assert failure.check == "not a system device"
    assert listed in failure.detail


def test_it_refuses_the_system_disk_itself() -> None:
    host = FakeHost()
    host.links["/dev/disk/by-id/nvme-SYSTEM_S4EWNX0R654321"] = "../../sda"
    system_disk = identity(path="/dev/disk/by-id/nvme-SYSTEM_S4EWNX0R654321", serial="S4EWNX0R654321")

    failure = refused(host, replace(system_disk, size_bytes=512_110_190_592))

    # Mounted, listed in fstab and holding / all at once: which check speaks first is the module's choice.
    assert failure.check in {"not a system device", "not mounted", "not in /etc/fstab"}
