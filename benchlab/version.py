"""benchlab's version, as reports print it: the release in pyproject.toml and, in a git
checkout, the commit (two reports from one release can differ by what was committed since)."""

import functools
import subprocess
import tomllib
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent


@functools.cache
def benchlab_release() -> str:
    """The release in pyproject.toml (what the API's schema names as its version)."""
    try:
        with (TOP / "pyproject.toml").open("rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown release"


@functools.cache
def benchlab_version() -> str:
    release = benchlab_release()
    try:
        commit = subprocess.run(
            ["git", "-C", str(TOP), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{release} ({commit})" if commit else release
