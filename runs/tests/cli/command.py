"""The installed `benchlab` command run as a subprocess, as a CI job runs it: beside this
interpreter (make installs cli/ into the project's virtualenv), with only the environment given."""

import os
import subprocess
import sys
from pathlib import Path

BENCHLAB = Path(sys.executable).parent / "benchlab"


def benchlab(
    *args: str,
    url: str | None = None,
    token: str | None = None,
    home: Path,
    stdin: str | None = None,
    timeout_s: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`benchlab args...` with BENCHLAB_URL and BENCHLAB_TOKEN set when given, and HOME (where the
    default config file would be) an empty directory of the test's."""
    assert BENCHLAB.exists(), f"{BENCHLAB} is not installed: `make test` installs cli/ (pip install -e cli)"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    env |= {"BENCHLAB_URL": url} if url else {}
    env |= {"BENCHLAB_TOKEN": token} if token else {}
    return subprocess.run([str(BENCHLAB), *args], env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout_s, check=False)  # fmt: skip
