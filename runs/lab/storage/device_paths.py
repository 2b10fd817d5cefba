"""Which paths may name a device under test: the inventory's rule and the lab's, in one place.

A block device is named by a stable path (/dev/disk/by-id/…, by-path/…): /dev/sdb may be
another disk after a reboot, and formatting the wrong disk cannot be undone. A directory
device holds the run's data in a subdirectory; it must not be the root, a system directory,
or a directory that holds benchlab's own data. Paths are taken only in normal form
(`/dev/disk/by-id/../../sda` is /dev/sda and is refused as such); on the host, symlinks are
resolved before these rules and the safety checks are applied (storage_checks.py).
"""

import posixpath
from collections.abc import Sequence

from runs.lab.errors import InvalidOption

STABLE_PREFIX = "/dev/disk/by-"
# Never a directory device, nor anything below them: the system itself, PostgreSQL's and
# Redis's data (benchlab's own database among them), and benchlab's own places on a host.
SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib/postgresql",
    "/var/lib/pgsql",
    "/var/lib/redis",
    "/var/lib/benchlab",
    "/var/log",
    "/mnt/benchlab",
)
# Not these themselves; a directory below them (a disk mounted at /mnt/nvme0) is fine.
SYSTEM_DIRECTORIES = (
    "/",
    "/home",
    "/media",
    "/mnt",
    "/opt",
    "/root",
    "/srv",
    "/tmp",  # noqa: S108 - a name to refuse, not a file to write
    "/var",
    "/var/lib",
    "/var/cache",
    "/var/mail",
    "/var/spool",
    "/var/tmp",  # noqa: S108
)


def normal_form(path: str) -> str:
    """The path as it must be written: absolute, without `.`, `..`, `//` or a trailing slash."""
    if not path.startswith("/"):
        raise InvalidOption(f"{path!r} is not an absolute path")
    normal = posixpath.normpath(path)
    if normal.startswith("//"):  # POSIX keeps a leading double slash
        normal = "/" + normal.lstrip("/")
    if normal != path:
        raise InvalidOption(f"write {path!r} as {normal!r} (without '.', '..', '//' or a trailing '/')")
    return normal


def is_within(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def check_block_device_path(path: str) -> None:
    """A block device must be named by a stable /dev/disk/by-*/ link, whatever its kind."""
    normal_form(path)
    name = path.removeprefix(STABLE_PREFIX).partition("/")[2]
    if not path.startswith(STABLE_PREFIX) or not name:
        raise InvalidOption(
            f"name a block device by a stable path such as /dev/disk/by-id/…, not {path!r} "
            "(kernel names like /dev/sdb can change at boot)"
        )


def check_directory_device_path(path: str, protected: Sequence[str] = ()) -> None:
    """Refuse a directory device that is the root, a system directory, or inside or above one
    of `protected` (benchlab's own data directories: its checkout, its var/)."""
    normal_form(path)
    for tree in SYSTEM_TREES:
        if is_within(path, tree):
            raise InvalidOption(f"{path} is a system directory (in {tree}); choose a directory of its own for runs")
    if path in SYSTEM_DIRECTORIES:
        raise InvalidOption(f"{path} is a system directory; choose a directory of its own below it for runs")
    for own in protected:
        if is_within(own, path) or is_within(path, own):
            raise InvalidOption(f"{path} holds benchlab's own data ({own}); choose a directory of its own for runs")
