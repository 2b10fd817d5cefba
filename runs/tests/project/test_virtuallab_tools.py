"""The virtual lab's own tools (scripts/lab): `status` says a host is reachable only when an SSH
login to it works as benchlab's workers make it (pinned host key, the lab's client key), so
`scripts/lab-ensure` repairs a lab whose bridge was deleted; a lab is removed only by the
checkout that made it, unless `--force`; and drift can be provoked on a host (a slower HDD, a
kernel release that changed) for the regression watch's tests."""

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from django.conf import settings

from runs.tests.virtual_lab import LAB_SCRIPT, ROOT, VirtualLab, lab_command, leftovers, start_lab

pytestmark = [pytest.mark.lab]


@pytest.fixture
def small_lab() -> Iterator[VirtualLab]:
    """A lab of one host with small disks, made by this checkout."""
    lab = start_lab(hosts=1, ssd="64M", hdd="64M", ram="64M")
    try:
        yield lab
    finally:
        lab_command(lab.lab_id, "down")  # says "not up" when another checkout's --force removed it
        shutil.rmtree(Path(settings.VAR_DIR) / "lab" / str(lab.lab_id), ignore_errors=True)  # its keys


@pytest.fixture
def other_checkout(tmp_path: Path) -> Path:
    """A second checkout of benchlab's lab scripts, with its own var directory."""
    scripts = tmp_path / "other-checkout" / "scripts"
    no_cache = shutil.ignore_patterns("__pycache__")
    shutil.copytree(LAB_SCRIPT.parent / "virtuallab", scripts / "virtuallab", ignore=no_cache)
    shutil.copy2(LAB_SCRIPT, scripts / "lab")
    return scripts.parent


def lab_from(checkout: Path, lab_id: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "BENCHLAB_VAR_DIR"}
    argv = [str(checkout / "scripts" / "lab"), "--id", str(lab_id), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)


def reachable(lab: VirtualLab) -> list[bool]:
    return [host["ssh_reachable"] for host in json.loads(lab_command(lab.lab_id, "status", "--json"))["hosts"]]


def test_status_says_a_host_is_unreachable_when_its_bridge_is_gone_though_its_address_answers_tcp(
    small_lab: VirtualLab,
) -> None:
    address = small_lab.host("lab1")["address"]
    reachable_at_first = reachable(small_lab)
    subprocess.run(["ip", "link", "del", f"blab{small_lab.lab_id}"], check=True)
    # With the bridge gone, something on the way answers the address (as a proxy would): here a
    # socket on loopback that accepts connections and never says a word of SSH.
    subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], check=True)
    try:
        with socket.create_server((address, 22)):
            report = json.loads(lab_command(small_lab.lab_id, "status", "--json"))
    finally:
        subprocess.run(["ip", "addr", "del", f"{address}/32", "dev", "lo"], check=False)

    assert reachable_at_first == [True]
    assert [(host["sshd_alive"], host["ssh_reachable"]) for host in report["hosts"]] == [(True, False)]
    assert report["bridge_present"] is False


def test_a_lab_made_by_one_checkout_is_not_removed_nor_remade_by_another_without_force(
    small_lab: VirtualLab, other_checkout: Path
) -> None:
    owner = str(ROOT.resolve())
    down = lab_from(other_checkout, small_lab.lab_id, "down")
    up = lab_from(other_checkout, small_lab.lab_id, "up", "--hosts", "1", "--ssd-size", "64M")
    status = lab_from(other_checkout, small_lab.lab_id, "status")
    still_reachable = reachable(small_lab)
    forced = lab_from(other_checkout, small_lab.lab_id, "down", "--force")
    status_after = json.loads(lab_command(small_lab.lab_id, "status", "--json"))

    assert down.returncode != 0 and f"lab {small_lab.lab_id} was made by the checkout {owner}" in down.stderr
    assert "add --force to `down`" in down.stderr
    assert up.returncode != 0 and f"was made by the checkout {owner}" in up.stderr, (up.stdout, up.stderr)
    assert f"belongs to the checkout {owner}" in status.stdout
    assert still_reachable == [True]
    assert forced.returncode == 0, forced.stderr
    assert f"removing the lab of the checkout {owner} (--force)" in forced.stdout
    assert status_after == {"lab_id": small_lab.lab_id, "up": False}
    assert leftovers(small_lab) == []


def hdd_write_seconds(lab: VirtualLab, blocks: int = 30) -> float:
    """Direct 4 kB writes to the host's HDD (the lab's own throw-away disk), timed."""
    started = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", f"of={lab.host('lab1')['disks']['hdd']['loop']}", "bs=4k",
                    f"count={blocks}", "oflag=direct", "status=none"], check=True)  # fmt: skip
    return time.monotonic() - started


def test_a_hosts_hdd_can_be_slowed_and_its_kernel_release_changed_and_both_undone(small_lab: VirtualLab) -> None:
    at_first = hdd_write_seconds(small_lab)
    lab_command(small_lab.lab_id, "hdd-slow", "lab1", "4")
    slowed = hdd_write_seconds(small_lab)
    status_slowed = json.loads(lab_command(small_lab.lab_id, "status", "--json"))["hosts"][0]["hdd_slowed"]
    lab_command(small_lab.lab_id, "hdd-slow", "lab1", "off")
    again = hdd_write_seconds(small_lab)
    with closing(small_lab.connect("lab1")) as lab1:
        real = lab1.run(["uname", "-r"]).stdout.strip()
        lab_command(small_lab.lab_id, "kernel", "lab1", "6.1.0-99-amd64")
        faked = (lab1.run(["uname", "-r"]).stdout.strip(), lab1.run(["uname", "-s"]).stdout.strip())
        lab_command(small_lab.lab_id, "kernel", "lab1", "off")
        undone = lab1.run(["uname", "-r"]).stdout.strip()
    bad = subprocess.run([str(LAB_SCRIPT), "--id", str(small_lab.lab_id), "kernel", "lab1", "6.1; rm -rf /"],
                         capture_output=True, text=True)  # fmt: skip

    # 30 writes of 5 ms each, then of 20 ms: measured 0.19-0.22 s against 0.8 s (delayfs by hand, 27 Nov 2026).
    assert slowed > 2.5 * at_first and again < 2 * at_first, (at_first, slowed, again)
    assert status_slowed == 4
    assert faked == ("6.1.0-99-amd64", "Linux") and undone == real == os.uname().release
    assert bad.returncode != 0 and "is not a kernel release" in bad.stderr
    assert subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip() == real  # this machine's
