"""The virtual lab's own processes, known by PID and identity (this boot, their start time): a
PID recorded before a reboot, or reused since, belongs to somebody else and is never signalled.
Standard library only, like lab.py.
"""

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path


def process_identity(pid: int) -> str:
    """This boot's id and the process's start time: together they name one process for good."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        started = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]  # field 22
    except (OSError, IndexError):
        return ""
    return f"{boot}:{started}"


def pid_alive(pid: int, identity: str = "") -> bool:
    """Is our process still there? With its identity, a reused PID does not count."""
    if pid <= 0:
        return False
    if identity and process_identity(pid) != identity:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours is dead for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def stop_pid(pid: int, identity: str, timeout: float = 20.0, first_signal: int = signal.SIGTERM) -> None:
    if not pid_alive(pid, identity):
        return
    os.kill(pid, first_signal)
    deadline = time.monotonic() + timeout
    while pid_alive(pid, identity) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid, identity):
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not pid_alive(pid, identity), f"process {pid} to die of SIGKILL", timeout=10.0)


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Until predicate() holds, looking every 0.1 s; a timeout ends the lab command, saying `what`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"lab: timed out waiting for {what}")
        time.sleep(0.1)
