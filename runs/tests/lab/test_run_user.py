"""benchlab's unprivileged OS user on this machine (root: useradd, runuser): it is created once,
refused when it has other rights, and root never follows its symlinks or signals for it."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runs.lab.errors import CommandFailed, LabError
from runs.lab.host.run_user import (
    RUN_USER,
    append_as_run_user,
    as_run_user,
    ensure_run_user,
    read_as_run_user,
    signal_as_run_user,
    stop_run_user_processes,
)
from runs.lab.transport.local import LocalTransport


@pytest.fixture
def root_only_file(tmp_path: Path) -> Iterator[Path]:
    """A file only root may read or write (in root's 0700 pytest directory)."""
    secret = tmp_path / "root-only"
    secret.write_text("root's secret\n")
    secret.chmod(0o600)
    yield secret


def test_the_user_is_created_once_with_no_rights_but_its_own() -> None:
    transport = LocalTransport()

    ensure_run_user(transport)
    ensure_run_user(transport)  # a second time changes nothing

    entry = subprocess.run(["getent", "passwd", RUN_USER], capture_output=True, text=True, check=True).stdout
    name, _, uid, _, _, home, shell = entry.strip().split(":")
    groups = subprocess.run(["id", "-Gn", RUN_USER], capture_output=True, text=True, check=True).stdout.split()
    assert (name, home, shell) == (RUN_USER, "/nonexistent", "/usr/sbin/nologin")
    assert int(uid) > 0 and groups == [RUN_USER]


def test_a_user_with_more_rights_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_run_user(LocalTransport())
    subprocess.run(["usermod", "-a", "-G", "disk", RUN_USER], check=True)  # could read raw disks
    try:
        with pytest.raises(LabError, match=r"not unprivileged.*disk"):
            ensure_run_user(LocalTransport())
    finally:
        subprocess.run(["gpasswd", "-d", RUN_USER, "disk"], check=True, capture_output=True)


def test_a_symlink_planted_by_the_user_does_not_make_root_read_a_file(run_user_dir: Path, root_only_file: Path) -> None:
    planted = run_user_dir / "pgbench.stdout"
    planted.symlink_to(root_only_file)

    with pytest.raises(CommandFailed, match="Permission denied"):
        read_as_run_user(LocalTransport(), str(planted))

    assert read_as_run_user(LocalTransport(), str(planted), check=False) == ""


def test_a_symlink_planted_by_the_user_does_not_make_root_write_a_file(
    run_user_dir: Path, root_only_file: Path
) -> None:
    planted = run_user_dir / "postgresql.conf"
    planted.symlink_to(root_only_file)

    with pytest.raises(CommandFailed):
        append_as_run_user(LocalTransport(), str(planted), "shared_buffers = '1GB'\n")

    assert root_only_file.read_text() == "root's secret\n"


def test_a_signal_as_the_user_reaches_only_the_users_processes() -> None:
    ensure_run_user(LocalTransport())
    bystander = subprocess.Popen(["sleep", "600"])  # root's
    try:
        delivered = signal_as_run_user(LocalTransport(), str(bystander.pid), "KILL")

        assert not delivered
        assert bystander.poll() is None
        os.kill(bystander.pid, 0)
    finally:
        bystander.kill()
        bystander.wait()


def test_whatever_the_user_left_running_is_stopped_and_nobody_elses() -> None:
    ensure_run_user(LocalTransport())
    leftover = (
        LocalTransport()
        .run(as_run_user(["sh", "-c", "setsid sleep 600 >/dev/null 2>&1 & echo $!"]), cwd="/")
        .stdout.strip()
    )
    bystander = subprocess.Popen(["sleep", "600"])  # root's
    try:
        stop_run_user_processes(LocalTransport())

        assert not Path(f"/proc/{leftover}").exists() or "Z" in Path(f"/proc/{leftover}/stat").read_text().split()[2]
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_user_whose_group_has_other_members_is_refused() -> None:
    ensure_run_user(LocalTransport())
    subprocess.run(["usermod", "-a", "-G", RUN_USER, "nobody"], check=True)
    try:
        with pytest.raises(LabError, match="its group also holds nobody"):
            ensure_run_user(LocalTransport())
    finally:
        subprocess.run(["gpasswd", "-d", "nobody", RUN_USER], check=True, capture_output=True)
