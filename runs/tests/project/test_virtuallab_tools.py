"""The virtual lab's own tools (scripts/lab): `status` says a host is reachable only when an SSH
login to it works as benchlab's workers make it (pinned host key, the lab's client key), so
`scripts/lab-ensure` repairs a lab whose bridge was deleted; and a lab is removed only by the
checkout that made it, unless `--force`."""

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from runs.tests.virtual_lab import LAB_SCRIPT, ROOT, VirtualLab, free_lab_id, lab_command, leftovers

pytestmark = [pytest.mark.lab]


@pytest.fixture
def small_lab() -> Iterator[VirtualLab]:
    """A lab of one host with small disks, made by this checkout."""
    lab_id = free_lab_id()
    try:
        lab_command(lab_id, "up", "--hosts", "1", "--ssd-size", "64M", "--hdd-size", "64M", "--ram-size", "64M")
        lab = VirtualLab(lab_id=lab_id, state=json.loads(lab_command(lab_id, "status", "--json")))
        yield lab
    finally:
        lab_command(lab_id, "down")  # says "not up" when another checkout's --force removed it
        shutil.rmtree(Path(settings.VAR_DIR) / "lab" / str(lab_id), ignore_errors=True)  # its keys


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
