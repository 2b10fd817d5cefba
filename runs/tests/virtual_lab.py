"""The virtual lab for integration tests: brought up once per test session by scripts/lab
with a lab number of its own, and checked to have left nothing behind when it goes down."""

import fcntl
import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from runs.lab.storage.checks import DeviceIdentity
from runs.lab.transport.ssh import SSHTarget, SSHTransport

ROOT = Path(settings.BASE_DIR)
LAB_SCRIPT = ROOT / "scripts" / "lab"
PG_BIN = "/usr/lib/postgresql/15/bin"


def lab_command(lab_id: int, *args: str) -> str:
    result = subprocess.run([str(LAB_SCRIPT), "--id", str(lab_id), *args], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"scripts/lab {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


@dataclass
class VirtualLab:
    lab_id: int
    state: dict[str, Any]

    def host(self, name: str) -> dict[str, Any]:
        return next(h for h in self.state["hosts"] if h["name"] == name)

    def target(self, name: str, **changes: Any) -> SSHTarget:
        host = self.host(name)
        fields: dict[str, Any] = {
            "address": host["address"],
            "host_keys": [host["host_key_pub"]],
            "private_key_path": self.state["client_key"],
        }
        return SSHTarget(**(fields | changes))

    def connect(self, name: str) -> SSHTransport:
        return SSHTransport(self.target(name))

    def disk(self, host: str, kind: str, **changes: Any) -> DeviceIdentity:
        disk = self.host(host)["disks"][kind]
        fields: dict[str, Any] = {"path": disk["link"], "wipe_allowed": True, "size_bytes": disk["size_bytes"]}
        return DeviceIdentity(**(fields | changes))

    @contextmanager
    def hdd_failing(self, name: str) -> Iterator[None]:
        """Inside, the host's HDD fails every read, write, flush and fsync with EIO (delayfs's
        fault switch, as `scripts/lab hdd-fail <host> on`); it works again afterwards."""
        control = Path(self.host(name)["hdd_fail_file"])
        control.touch()
        try:
            yield
        finally:
            control.unlink(missing_ok=True)


@contextmanager
def scratch_disk(name: str, size_bytes: int) -> Iterator[str]:
    """A small disk of a test's own: a loop device over an image in /dev/shm, named by a stable
    link (/dev/disk/by-id/benchlab-test-<pid>-<name>, which it yields). The virtual lab's hosts
    share the machine's /dev, so any of them can use it. Detached and removed afterwards."""
    stem = f"benchlab-test-{os.getpid()}-{name}"
    image, link = Path("/dev/shm") / f"{stem}.img", Path("/dev/disk/by-id") / stem
    with ExitStack() as undo:  # in reverse: the link, the loop device, the image
        subprocess.run(["truncate", "-s", str(size_bytes), str(image)], check=True)
        undo.callback(image.unlink)
        loop = subprocess.run(["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True)
        node = loop.stdout.strip()
        undo.callback(_detach, node, image)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(node)
        undo.callback(link.unlink)
        yield str(link)


def _backing_file(node: str) -> str | None:
    try:
        return Path(f"/sys/block/{Path(node).name}/loop/backing_file").read_text().strip()
    except OSError:  # detached
        return None


def _detach(node: str, image: Path) -> None:
    """Detach the loop device if it is still ours; `losetup -d` of a device still in use only
    marks it, and it goes once released: wait for that."""
    deadline = time.monotonic() + 10
    while _backing_file(node) == str(image):
        subprocess.run(["losetup", "-d", node], capture_output=True)
        if time.monotonic() > deadline:
            raise RuntimeError(f"could not detach {node}")
        time.sleep(0.1)


def free_lab_id() -> int:
    lab_root = Path(settings.VAR_DIR) / "lab"
    candidates = [n for n in range(100, 200) if not (lab_root / str(n) / "state.json").exists()]
    for lab_id in random.sample(candidates, len(candidates)):
        if not Path(f"/sys/class/net/blab{lab_id}").exists():
            return lab_id
    raise RuntimeError("no free lab number")


# Two sessions (make test's two lines of lab tests, or two checkouts) starting a lab at once could
# pick one number: the second `up` would fail and its `down` take the first's lab away. A number is
# picked and its bridge made under this machine-wide lock.
START_LOCK = Path("/run/lock/benchlab-virtual-lab-start")


def start_lab(hosts: int = 3, ssd: str = "1G", hdd: str = "512M", ram: str = "384M") -> VirtualLab:
    with START_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lab_id = free_lab_id()
        try:
            lab_command(lab_id, "up", "--hosts", str(hosts), "--ssd-size", ssd, "--hdd-size", hdd, "--ram-size", ram)
            return VirtualLab(lab_id=lab_id, state=json.loads(lab_command(lab_id, "status", "--json")))
        except BaseException:
            lab_command(lab_id, "down")  # whatever `up` made before it failed
            raise


def leftovers(lab: VirtualLab) -> list[str]:
    """Everything of this lab that is still on the machine after `down` (should be nothing)."""
    found = []
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [f"namespace {line.split()[0]}" for line in namespaces.splitlines() if f"blab{lab.lab_id}-" in line]
    if Path(f"/sys/class/net/blab{lab.lab_id}").exists():
        found.append(f"bridge blab{lab.lab_id}")
    listing = subprocess.run(["losetup", "-J"], capture_output=True, text=True).stdout
    loops = json.loads(listing or '{"loopdevices": []}')
    images = {disk["image"] for host in lab.state["hosts"] for disk in host["disks"].values()}
    found += [f"loop device {d['name']}" for d in loops["loopdevices"] if d.get("back-file") in images]
    mounts = Path("/proc/mounts").read_text()
    found += [f"mount {line.split()[1]}" for line in mounts.splitlines() if f"/lab/{lab.lab_id}/" in line]
    for host in lab.state["hosts"]:
        for pid in (host["sshd_pid"], host["delayfs_pid"]):
            try:
                alive = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            except OSError:  # gone, possibly between two reads
                alive = False
            if alive:
                found.append(f"process {pid}")
        for disk in host["disks"].values():
            if os.path.lexists(disk["link"]):
                found.append(f"link {disk['link']}")
    return found


def stop_lab(lab: VirtualLab) -> list[str]:
    lab_command(lab.lab_id, "down")
    left = leftovers(lab)
    if not left:  # the keys `down` keeps for a lab that comes back; a test lab does not
        shutil.rmtree(Path(settings.VAR_DIR) / "lab" / str(lab.lab_id))
    return left
