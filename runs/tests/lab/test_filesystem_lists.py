"""A filesystem is named in a few places that must agree: what the options accept, what the
model offers the forms, what mkfs runs and what the probe looks for. One test holds them
together, so that a new filesystem cannot be added to one and forgotten in another
(ARCHITECTURE.md, "How to add a new filesystem")."""

from runs.lab.host.probe import MKFS_PROGRAMS
from runs.lab.options import BLOCK_FILESYSTEMS, FILESYSTEMS, MKFS_OPTIONS, MOUNT_OPTIONS
from runs.lab.storage.prepare import MKFS_COMMAND
from runs.models import Filesystem


def test_the_forms_offer_exactly_the_filesystems_the_lab_accepts() -> None:
    assert sorted(Filesystem.values) == sorted(FILESYSTEMS)


def test_every_block_filesystem_has_its_mkfs_its_options_and_a_probe() -> None:
    assert sorted(MKFS_COMMAND) == sorted(BLOCK_FILESYSTEMS)
    assert sorted(MKFS_OPTIONS) == sorted(BLOCK_FILESYSTEMS)
    assert sorted(MOUNT_OPTIONS) == sorted(FILESYSTEMS)
    assert sorted(MKFS_PROGRAMS) == sorted(f"mkfs.{fstype}" for fstype in BLOCK_FILESYSTEMS)
