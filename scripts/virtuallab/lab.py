"""A virtual lab on one machine: SSH hosts in network namespaces, each with its own disks.

Every host is a network namespace on a private bridge, running its own sshd inside
`unshare --uts --pid --mount` (its own hostname, process table and mounts; killing that
sshd ends the whole "host"). Each host gets three disks, all loop devices:
  ssd  an image file on the machine's disk,
  hdd  an image inside a FUSE filesystem that delays every I/O (delayfs.c), which can
       also be told to fail with EIO,
  ram  an image in /dev/shm.
A stable name for each disk is linked at /dev/disk/by-id/benchlab-lab<ID>-<host>-<disk>.

Everything made is recorded in <var>/lab/<ID>/state.json and undone by `down`, which
touches only what that file names (loop devices are checked against their image first).
A lab's names (bridge, namespaces, addresses) are the machine's, not a checkout's: the checkout
that made lab <ID> is recorded in its state and in a claim on the machine (CLAIMS/<ID>.json), and
another checkout may neither make lab <ID> again nor remove it without `--force`.
`status` tests each host as benchlab's workers reach it: an SSH login with the lab's client key
that accepts only the host's own key (OpenSSH: this runs before any virtualenv, without paramiko).
Keys survive `down`, so the inventory's pinned host keys stay valid across restarts.
Standard library only: this runs as root before any virtualenv exists.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from virtuallab.processes import pid_alive, process_identity, stop_pid, wait_for

HOST_RUNS_PARENT = "/var/lib/benchlab"  # where benchlab keeps run directories on a host (runs/lab/benchmark/run.py)

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
BY_ID = Path("/dev/disk/by-id")
# Which checkout made each lab on this machine; gone at a reboot, like the labs' bridges.
CLAIMS = Path("/run/benchlab-labs")
SSH_TIMEOUT_S = 5


@dataclass
class Disk:
    kind: str
    image: str
    loop: str
    link: str
    size_bytes: int


@dataclass
class LabHost:
    name: str
    namespace: str
    address: str
    veth: str
    state_dir: str
    host_key_pub: str
    sshd_pid: int = 0  # the `unshare --kill-child` process that holds the host's namespaces
    delayfs_pid: int = 0
    # Boot and start time of each process (process_identity): after a reboot, or once a PID
    # is reused, the recorded PID is somebody else's and must not be signalled.
    sshd_identity: str = ""
    delayfs_identity: str = ""
    delayfs_mount: str = ""
    hdd_fail_file: str = ""
    hdd_slow_file: str = ""  # while it exists, the HDD's delays are multiplied by the number in it
    kernel_release: str = ""  # what `uname -r` says on the host when faked (kernel_fake), else ""
    disks: dict[str, Disk] = field(default_factory=dict)


@dataclass
class Lab:
    lab_id: int
    bridge: str
    subnet: str
    client_key: str
    hosts: list[LabHost] = field(default_factory=list)
    checkout: str = ""  # the absolute path of the checkout that made it (empty: made before this was kept)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> Lab:
        raw = json.loads(path.read_text())
        hosts = []
        for host in raw.pop("hosts"):
            disks = {kind: Disk(**disk) for kind, disk in host.pop("disks").items()}
            hosts.append(LabHost(**host, disks=disks))
        return cls(**raw, hosts=hosts)


def sh(*argv: str, check: bool = True, capture: bool = True) -> str:
    result = subprocess.run(argv, check=False, capture_output=capture, text=True)
    if check and result.returncode != 0:
        raise SystemExit(f"lab: `{' '.join(argv)}` failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout.strip() if capture else ""


def var_dir() -> Path:
    return Path(os.environ.get("BENCHLAB_VAR_DIR", PROJECT / "var"))


def lab_dir(lab_id: int) -> Path:
    return var_dir() / "lab" / str(lab_id)


def ensure_key(path: Path, comment: str) -> str:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


def build_delayfs(state: Path) -> Path:
    binary = state.parent / "delayfs"
    source = HERE / "delayfs.c"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        # Built beside it and renamed into place: another lab starting at the same time may be
        # running the binary already, and writing over a running program fails (ETXTBSY).
        flags = sh("pkg-config", "fuse3", "--cflags", "--libs").split()
        built = binary.with_name(f"delayfs.{os.getpid()}")
        sh("gcc", "-O2", "-Wall", "-Wextra", "-o", str(built), str(source), *flags)
        built.replace(binary)
    return binary


def port_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def attach_loop(image: Path, link: Path, kind: str, size: int) -> Disk:
    loop = sh("losetup", "--find", "--show", str(image))
    BY_ID.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(loop)
    return Disk(kind=kind, image=str(image), loop=loop, link=str(link), size_bytes=size)


def start_host(lab: Lab, index: int, state: Path, sizes: dict[str, int], delay_ms: int) -> LabHost:
    name = f"lab{index}"
    host_dir = state / name
    host_dir.mkdir(parents=True, exist_ok=True)
    host = LabHost(
        name=name,
        namespace=f"blab{lab.lab_id}-{name}",
        address=f"10.200.{lab.lab_id}.{10 + index}",
        veth=f"blab{lab.lab_id}h{index}",
        state_dir=str(host_dir),
        host_key_pub=ensure_key(host_dir / "ssh_host_ed25519_key", f"{name}-host-key"),
    )
    lab.hosts.append(host)

    # Network: a namespace with one veth into the lab bridge; no default route out.
    sh("ip", "netns", "add", host.namespace)
    sh("ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
    sh("ip", "link", "set", host.veth, "master", lab.bridge, "up")
    sh("ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
    sh("ip", "-n", host.namespace, "link", "set", "eth0", "up")
    sh("ip", "-n", host.namespace, "link", "set", "lo", "up")

    # sshd, with its own hostname, PID namespace and mount namespace.
    client_pub = Path(lab.client_key).with_suffix(".pub").read_text()
    (host_dir / "authorized_keys").write_text(client_pub)
    config = host_dir / "sshd_config"
    config.write_text(
        f"ListenAddress {host.address}\nPort 22\nHostKey {host_dir}/ssh_host_ed25519_key\n"
        f"PidFile {host_dir}/sshd.pid\nAuthorizedKeysFile {host_dir}/authorized_keys\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\nClientAliveInterval 5\n"
        "MaxStartups 100\nMaxSessions 100\nLogLevel INFO\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    # Hosts share the machine's root filesystem; benchlab's run directories must not be shared
    # too (a run with a client host uses the same path on both), so each host gets its own
    # /var/lib/benchlab, bind-mounted inside its mount namespace only.
    own_var = host_dir / "var-lib-benchlab"
    own_var.mkdir(exist_ok=True)
    Path(HOST_RUNS_PARENT).mkdir(parents=True, exist_ok=True)
    # sshd runs every command through root's login shell, and bash reads ~/.bashrc when sshd
    # starts it: this machine's (pyenv and cargo set-up) costs about 90 ms per command, which a
    # lab host's own root would not have. Inside the host's mount namespace it reads nothing.
    quiet_shell = "{ [ ! -f /root/.bashrc ] || mount --bind /dev/null /root/.bashrc; }"
    start = f'mount --bind "$2" "$3" && {quiet_shell} && hostname "$0" && exec /usr/sbin/sshd -D -e -f "$1"'
    with (host_dir / "sshd.log").open("ab") as log:
        process = subprocess.Popen(
            ["ip", "netns", "exec", host.namespace,
             "unshare", "--uts", "--pid", "--mount-proc", "--propagation", "private", "--kill-child",
             "sh", "-c", start, name, str(config), str(own_var), HOST_RUNS_PARENT],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    host.sshd_pid, host.sshd_identity = process.pid, process_identity(process.pid)
    wait_for(lambda: port_open(host.address, 22), f"sshd of {name} at {host.address}:22")

    # Disks.
    images = state / "images"
    images.mkdir(exist_ok=True)
    link_prefix = f"benchlab-lab{lab.lab_id}-{name}"

    ssd_image = images / f"{name}-ssd.img"
    sh("truncate", "-s", str(sizes["ssd"]), str(ssd_image))
    host.disks["ssd"] = attach_loop(ssd_image, BY_ID / f"{link_prefix}-ssd", "ssd", sizes["ssd"])

    backing, mount = host_dir / "hdd-backing", host_dir / "hdd-mount"
    backing.mkdir(exist_ok=True)
    mount.mkdir(exist_ok=True)
    host.hdd_fail_file = str(host_dir / "hdd.fail")
    host.hdd_slow_file = str(host_dir / "hdd.slow")
    Path(host.hdd_fail_file).unlink(missing_ok=True)
    Path(host.hdd_slow_file).unlink(missing_ok=True)
    with (host_dir / "delayfs.log").open("ab") as log:
        delayfs = subprocess.Popen(
            [str(build_delayfs(state)), str(backing), str(mount), "-f", "--delay-ms", str(delay_ms),
             "--control", host.hdd_fail_file, "--slow", host.hdd_slow_file],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    host.delayfs_pid, host.delayfs_mount = delayfs.pid, str(mount)
    host.delayfs_identity = process_identity(delayfs.pid)
    wait_for(lambda: os.path.ismount(mount), f"delayfs of {name}")
    hdd_image = mount / "hdd.img"
    sh("truncate", "-s", str(sizes["hdd"]), str(hdd_image))
    host.disks["hdd"] = attach_loop(hdd_image, BY_ID / f"{link_prefix}-hdd", "hdd", sizes["hdd"])

    ram_image = Path("/dev/shm") / f"{link_prefix}-ram.img"  # noqa: S108 - RAM-backed on purpose
    sh("truncate", "-s", str(sizes["ram"]), str(ram_image))
    host.disks["ram"] = attach_loop(ram_image, BY_ID / f"{link_prefix}-ram", "ram", sizes["ram"])
    return host


def claim_of(lab_id: int) -> dict[str, str]:
    """The machine's record of who made lab <ID>: {"checkout": ..., "state_file": ...}, or {}."""
    try:
        return json.loads((CLAIMS / f"{lab_id}.json").read_text())
    except (OSError, ValueError):
        return {}


def claim(lab_id: int, state_file: Path) -> None:
    CLAIMS.mkdir(parents=True, exist_ok=True)
    record = {"checkout": str(PROJECT), "state_file": str(state_file)}
    (CLAIMS / f"{lab_id}.json").write_text(json.dumps(record, indent=2))


def owner_refusal(lab_id: int, owner: str, doing: str) -> str:
    return (
        f"lab {lab_id} was made by the checkout {owner}, not by this one ({PROJECT}); a benchlab there may be "
        f"using it. Refusing to {doing} it: run `scripts/lab --id {lab_id} down` in {owner}, use another lab "
        f"number (--id or BENCHLAB_LAB_ID), or add --force to `down` to remove it anyway."
    )


def up(lab_id: int, host_count: int, sizes: dict[str, int], delay_ms: int) -> Lab:
    state = lab_dir(lab_id)
    state_file = state / "state.json"
    owner = claim_of(lab_id).get("checkout")
    if owner and owner != str(PROJECT):
        raise SystemExit(owner_refusal(lab_id, owner, "make"))
    if state_file.exists():
        raise SystemExit(f"lab {lab_id} is already up (state in {state_file}); run `scripts/lab down` first")
    if Path(f"/sys/class/net/blab{lab_id}").exists():  # made by something that left no claim: not ours to undo
        raise SystemExit(f"lab {lab_id}: the bridge blab{lab_id} exists already, made elsewhere; use another --id")
    state.mkdir(parents=True, exist_ok=True)
    lab = Lab(
        lab_id=lab_id,
        bridge=f"blab{lab_id}",
        subnet=f"10.200.{lab_id}.0/24",
        client_key=str(state / "client_ed25519"),
        checkout=str(PROJECT),
    )
    ensure_key(Path(lab.client_key), "benchlab-workers")
    sh("ip", "link", "add", lab.bridge, "type", "bridge")  # failing, it made nothing to undo
    try:
        lab.save(state_file)
        claim(lab_id, state_file)
        sh("ip", "addr", "add", f"10.200.{lab_id}.1/24", "dev", lab.bridge)
        sh("ip", "link", "set", lab.bridge, "up")
        for index in range(1, host_count + 1):
            start_host(lab, index, state, sizes, delay_ms)
            lab.save(state_file)
    except BaseException:
        lab.save(state_file)
        down(lab_id)
        raise
    return lab


def detach_loop(disk: Disk) -> None:
    backing = Path(f"/sys/block/{Path(disk.loop).name}/loop/backing_file")
    if not backing.exists():
        return
    if backing.read_text().strip() != disk.image:
        print(f"lab: {disk.loop} now belongs to {backing.read_text().strip()}, not ours; leaving it")
        return
    for _ in range(100):  # a mount in a namespace that just died is released asynchronously
        if subprocess.run(["losetup", "-d", disk.loop], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    else:
        print(f"lab: could not detach {disk.loop}")
    # `losetup -d` on a busy device only sets autoclear; wait for it to go.
    for _ in range(100):
        if not backing.exists():
            return
        time.sleep(0.1)


def down(lab_id: int, force: bool = False) -> None:
    """Undo what `up` made, if this checkout made it (or with force: a lab another checkout made)."""
    state_file = lab_dir(lab_id) / "state.json"
    claimed = claim_of(lab_id)
    owner = claimed.get("checkout") or (Lab.load(state_file).checkout if state_file.exists() else "")
    if owner and owner != str(PROJECT):
        if not force:
            raise SystemExit(owner_refusal(lab_id, owner, "remove"))
        print(f"lab {lab_id}: removing the lab of the checkout {owner} (--force)")
        state_file = Path(claimed.get("state_file") or state_file)
    if not state_file.exists():
        print(f"lab {lab_id} is not up")
        return
    state = state_file.parent
    lab = Lab.load(state_file)
    for host in lab.hosts:
        # Ends every process of the host (sshd is PID 1 of its namespace) and so its mounts.
        # unshare ignores SIGTERM while it waits; SIGKILL makes --kill-child end the namespace.
        stop_pid(host.sshd_pid, host.sshd_identity, first_signal=signal.SIGKILL)
    for host in lab.hosts:
        for disk in host.disks.values():
            detach_loop(disk)
            link = Path(disk.link)
            if link.is_symlink() and os.readlink(link) == disk.loop:
                link.unlink()
        if host.delayfs_mount and os.path.ismount(host.delayfs_mount):
            sh("fusermount3", "-u", host.delayfs_mount, check=False)
        stop_pid(host.delayfs_pid, host.delayfs_identity)
        ram = host.disks.get("ram")
        if ram:
            Path(ram.image).unlink(missing_ok=True)
        for control in (host.hdd_fail_file, host.hdd_slow_file):
            if control:
                Path(control).unlink(missing_ok=True)
        sh("ip", "link", "del", host.veth, check=False)
        sh("ip", "netns", "del", host.namespace, check=False)
    sh("ip", "link", "del", lab.bridge, check=False)
    shutil.rmtree(state / "images", ignore_errors=True)
    for host in lab.hosts:
        shutil.rmtree(Path(host.state_dir) / "hdd-backing", ignore_errors=True)
        shutil.rmtree(Path(host.state_dir) / "var-lib-benchlab", ignore_errors=True)
    for directory in (BY_ID, BY_ID.parent):
        try:
            directory.rmdir()  # only when empty: other links are not ours
        except OSError:
            pass
    state_file.unlink()
    if claim_of(lab_id).get("state_file") == str(state_file):
        (CLAIMS / f"{lab_id}.json").unlink()
    print(f"lab {lab_id} is down")


def ssh_answers(host: LabHost, client_key: str) -> bool:
    """Does the host answer as benchlab's workers connect: an SSH login as root with the lab's
    client key, accepting only the host's own key? (A TCP connect is not enough: with the lab's
    bridge gone, whatever answers for the address on the way, a proxy, would count.)"""
    with tempfile.NamedTemporaryFile("w", prefix="lab-known-hosts-") as known_hosts:
        known_hosts.write(f"{host.address} {host.host_key_pub}\n")
        known_hosts.flush()
        options = {
            "BatchMode": "yes", "StrictHostKeyChecking": "yes", "UserKnownHostsFile": known_hosts.name,
            "GlobalKnownHostsFile": "/dev/null", "IdentitiesOnly": "yes", "ConnectTimeout": str(SSH_TIMEOUT_S),
        }  # fmt: skip
        argv = ["ssh", "-F", "/dev/null", "-i", client_key, *(f"-o{k}={v}" for k, v in options.items())]
        try:
            login = subprocess.run(
                [*argv, f"root@{host.address}", "true"], capture_output=True, timeout=3 * SSH_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return False
    return login.returncode == 0


def status(lab_id: int) -> dict[str, object]:
    state_file = lab_dir(lab_id) / "state.json"
    if not state_file.exists():
        owner = claim_of(lab_id).get("checkout")
        return {"lab_id": lab_id, "up": False} | ({"owned_by": owner} if owner and owner != str(PROJECT) else {})
    lab = Lab.load(state_file)
    with ThreadPoolExecutor(max_workers=max(1, len(lab.hosts))) as pool:
        reachable = list(pool.map(lambda host: ssh_answers(host, lab.client_key), lab.hosts))
    hosts = []
    for host, ssh_reachable in zip(lab.hosts, reachable, strict=True):
        disks = {
            kind: asdict(disk) | {"attached": Path(f"/sys/block/{Path(disk.loop).name}/loop").exists()}
            for kind, disk in host.disks.items()
        }
        hosts.append(
            asdict(host)
            | {
                "sshd_alive": pid_alive(host.sshd_pid, host.sshd_identity),
                "ssh_reachable": ssh_reachable,
                "delayfs_alive": pid_alive(host.delayfs_pid, host.delayfs_identity),
                "hdd_failing": bool(host.hdd_fail_file) and Path(host.hdd_fail_file).exists(),
                "hdd_slowed": _slow_factor(host),
                "disks": disks,
            }
        )
    return asdict(lab) | {"up": True, "bridge_present": Path(f"/sys/class/net/{lab.bridge}").exists(), "hosts": hosts}


def set_hdd_failing(lab_id: int, host_name: str, failing: bool) -> None:
    host = _host(Lab.load(lab_dir(lab_id) / "state.json"), host_name)
    control = Path(host.hdd_fail_file)
    if failing:
        control.touch()
    else:
        control.unlink(missing_ok=True)


def _host(lab: Lab, host_name: str) -> LabHost:
    host = next((h for h in lab.hosts if h.name == host_name), None)
    if host is None:
        raise SystemExit(f"lab: no host {host_name!r} in lab {lab.lab_id}")
    return host


def _slow_factor(host: LabHost) -> float | None:
    control = Path(host.hdd_slow_file) if host.hdd_slow_file else None
    return float(control.read_text()) if control and control.exists() else None


def set_hdd_slow(lab_id: int, host_name: str, factor: float | None) -> None:
    """Make a host's HDD `factor` times as slow (a disk wearing out), or as it was (None): delayfs
    multiplies every delay by the number in the control file from its next request on."""
    host = _host(Lab.load(lab_dir(lab_id) / "state.json"), host_name)
    if not host.hdd_slow_file:
        raise SystemExit(f"lab: {host_name}'s HDD was made before it could be slowed: take the lab down and up")
    control = Path(host.hdd_slow_file)
    if factor is None:
        control.unlink(missing_ok=True)
    elif not 0 < factor <= 1000:
        raise SystemExit(f"lab: a slow-down factor is between 0 and 1000, not {factor:g}")
    else:
        control.write_text(f"{factor:g}\n")


def set_kernel_release(lab_id: int, host_name: str, release: str | None) -> None:
    """Make `uname -r` on a host say `release` (a kernel upgrade, as the host's drift facts see it),
    or the machine's own again (None). The hosts share this machine's kernel; inside the host's own
    mount namespace a script is bind-mounted over uname, which answers -r and passes the rest on."""
    state = lab_dir(lab_id) / "state.json"
    lab = Lab.load(state)
    host = _host(lab, host_name)
    if release is not None and not re.fullmatch(r"[0-9A-Za-z._+-]{1,64}", release):
        raise SystemExit(f"lab: {release!r} is not a kernel release (letters, digits, . _ + -)")
    inside = ["nsenter", "--mount", "--pid", "--target", str(_namespace_pid(host))]  # its /proc too: umount reads it
    uname = shutil.which("uname") or "/usr/bin/uname"
    sh(*inside, "umount", uname, check=False)  # a fake from before, if any
    if release is not None:
        real = Path(host.state_dir) / "uname.real"
        shutil.copy2(uname, real)
        fake = Path(host.state_dir) / "uname"
        fake.write_text(
            f'#!/bin/sh\n[ "$1" = "-r" ] && [ $# -eq 1 ] && {{ echo {release}; exit 0; }}\nexec {real} "$@"\n'
        )
        fake.chmod(0o755)
        sh(*inside, "mount", "--bind", str(fake), uname)
    host.kernel_release = release or ""
    lab.save(state)


def _namespace_pid(host: LabHost) -> int:
    """A process inside the host's namespaces: the child of the `unshare` process recorded."""
    if not pid_alive(host.sshd_pid, host.sshd_identity):
        raise SystemExit(f"lab: {host.name} is down")
    children = Path(f"/proc/{host.sshd_pid}/task/{host.sshd_pid}/children").read_text().split()
    if not children:
        raise SystemExit(f"lab: {host.name}'s sshd has no process inside its namespaces")
    return int(children[0])
