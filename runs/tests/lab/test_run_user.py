"""benchlab's unprivileged OS user on this machine (root: useradd, runuser): it is created once,
refused when it has other rights, and root never follows its symlinks or signals for it.

The tests that give an account rights, or stop all of its processes, do it to an account of their
own (`throwaway_user`), made and checked as RUN_USER is: runs on the virtual lab (whose hosts share
this machine's /etc) and on this machine may be using RUN_USER at the same time."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runs.lab.errors import CommandFailed, LabError
from runs.lab.host.run_user import (
    RUN_USER,
    append_as_run_user,
    ensure_run_user,
    read_as_run_user,
    signal_as_run_user,
    stop_run_user_processes,
)
from runs.lab.transport.interface import as_user
from runs.lab.transport.local import LocalTransport


@pytest.fixture
def throwaway_user() -> Iterator[str]:
    """An account of this test's own, made by ensure_run_user as RUN_USER is, and removed after."""
    user = f"blab-test-{os.getpid()}"
    ensure_run_user(LocalTransport(), user)
    try:
        yield user
    finally:
        subprocess.run(["userdel", user], check=True, capture_output=True)
        for deny in ("/etc/cron.deny", "/etc/at.deny"):  # ensure_run_user keeps the account out of cron and at
            path = Path(deny)
            if path.exists():
                path.write_text("".join(line for line in path.read_text().splitlines(True) if line.strip() != user))


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


def test_a_user_with_more_rights_is_refused(throwaway_user: str) -> None:
    subprocess.run(["usermod", "-a", "-G", "disk", throwaway_user], check=True)  # could read raw disks

    with pytest.raises(LabError, match=rf"OS user {throwaway_user} on .* not unprivileged.*disk"):
        ensure_run_user(LocalTransport(), throwaway_user)


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


def test_whatever_the_user_left_running_is_stopped_and_nobody_elses(throwaway_user: str) -> None:
    leftover = (
        LocalTransport()
        .run(as_user(throwaway_user, ["sh", "-c", "setsid sleep 600 >/dev/null 2>&1 & echo $!"]), cwd="/")
        .stdout.strip()
    )
    bystander = subprocess.Popen(["sleep", "600"])  # root's
    try:
        stop_run_user_processes(LocalTransport(), throwaway_user)

        assert not Path(f"/proc/{leftover}").exists() or "Z" in Path(f"/proc/{leftover}/stat").read_text().split()[2]
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_user_whose_group_has_other_members_is_refused(throwaway_user: str) -> None:
    subprocess.run(["usermod", "-a", "-G", throwaway_user, "nobody"], check=True)
    try:
        with pytest.raises(LabError, match="its group also holds nobody"):
            ensure_run_user(LocalTransport(), throwaway_user)
    finally:
        subprocess.run(["gpasswd", "-d", "nobody", throwaway_user], check=True, capture_output=True)
