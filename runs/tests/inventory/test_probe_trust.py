"""The probe lists only PostgreSQL installs that nobody but root can change: a `postgres` in a
directory others may write to is not offered for the inventory."""

import subprocess
from pathlib import Path

import pytest

from runs.lab.host.probe import TRUSTED_PATH


def trusted(path: Path) -> bool:
    return subprocess.run(["sh", "-c", f'{TRUSTED_PATH}; trusted "$1"', "sh", str(path)]).returncode == 0


@pytest.fixture
def install(tmp_path: Path) -> Path:
    """A root-owned bin directory with a program in it, below root's own 0700 directory."""
    program = tmp_path / "opt" / "pg" / "bin" / "postgres"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    for directory in (tmp_path / "opt", tmp_path / "opt" / "pg", program.parent):
        directory.chmod(0o755)
    return program


def test_a_root_owned_install_is_trusted(install: Path) -> None:
    assert trusted(install)


@pytest.mark.parametrize("writable", ["program", "bin", "grandparent"])
def test_an_install_others_could_change_is_not(install: Path, writable: str) -> None:
    target = {"program": install, "bin": install.parent, "grandparent": install.parent.parent.parent}[writable]
    target.chmod(target.stat().st_mode | 0o002)

    assert not trusted(install)


def test_a_sticky_world_writable_directory_above_is_fine(install: Path) -> None:
    sticky = install.parent.parent.parent
    sticky.chmod(0o1777)

    assert trusted(install)
