"""Mounting and unmounting on a host: the mount table, the kernel's own words when a mount
fails, and an unmount that waits out a busy filesystem and stops only the run's own processes."""

import re
import time
from collections.abc import Sequence

from runs.lab.errors import CommandFailed, LabError
from runs.lab.host.run_user import signal_as_run_user
from runs.lab.transport.interface import Transport
from runs.lab.transport.waiting import wait_until

MOUNT_ROOT = "/mnt/benchlab"


def kernel_log_cursor(transport: Transport) -> float:
    """Where the kernel's log ends now: what is logged later has a later timestamp."""
    lines = transport.run(["dmesg"], check=False).stdout.splitlines()
    return dmesg_time(lines[-1]) if lines else 0.0


def dmesg_time(line: str) -> float:
    match = re.match(r"\[\s*(\d+\.\d+)\]", line)
    return float(match.group(1)) if match else 0.0


def dmesg_message(line: str) -> str:
    """The line without its timestamp."""
    return re.sub(r"^\[\s*\d+\.\d+\]\s*", "", line)


def kernel_log_since(transport: Transport, since: float) -> list[str]:
    """The kernel's log lines (as `dmesg` prints them) written after the cursor `since`."""
    return [line for line in transport.run(["dmesg"], check=False).stdout.splitlines() if dmesg_time(line) > since]


def _kernel_reason(transport: Transport, since: float, fstype: str, node: str) -> str:
    """The kernel's own words about a failed mount, from the log lines written since `since`."""
    device = node.rsplit("/", 1)[-1]
    relevant = [
        dmesg_message(line)
        for line in kernel_log_since(transport, since)
        if device in line or fstype.lower() in line.lower() or "parameter" in line.lower()
    ]
    return "; ".join(relevant[-5:])


def make_mountpoint(transport: Transport, mountpoint: str) -> None:
    # Each level 0755 whatever root's umask: the run's user must reach its cluster below it.
    transport.run(["install", "-d", "-m", "0755", MOUNT_ROOT, mountpoint])


def mount_filesystem(transport: Transport, source: str, mountpoint: str, fstype: str, options: Sequence[str]) -> str:
    """Mount and return the options as /proc/mounts shows them (not as requested)."""
    make_mountpoint(transport, mountpoint)
    cursor = kernel_log_cursor(transport)
    argv = ["mount", "-t", fstype, *(["-o", ",".join(options)] if options else []), source, mountpoint]
    result = transport.run(argv, check=False)
    if result.exit_status != 0:
        time.sleep(0.2)  # let the kernel's message reach the log
        reason = _kernel_reason(transport, cursor, fstype, source)
        message = result.stderr.strip() + (f" — kernel: {reason}" if reason else "")
        raise CommandFailed(" ".join(argv), result.exit_status, result.stdout, message, transport.label)
    return mounted_options(transport, mountpoint)


def _mount_table(transport: Transport) -> list[list[str]]:
    """The kernel's mount table (source, mountpoint, type, options, ...) of the host's namespace."""
    lines = transport.run(["cat", "/proc/mounts"]).stdout.splitlines()
    return [fields for fields in (line.split() for line in lines) if len(fields) >= 4]


def mounted_options(transport: Transport, mountpoint: str) -> str:
    for fields in _mount_table(transport):
        if fields[1] == mountpoint:
            return fields[3]
    raise LabError(f"{mountpoint} is not in /proc/mounts after mounting")


def is_mounted(transport: Transport, mountpoint: str) -> bool:
    """From the mount table, not by looking at the directory: a filesystem shut down after an
    I/O error (xfs) fails every stat of its root, and `mountpoint` then says "not a mountpoint"."""
    return any(fields[1] == mountpoint for fields in _mount_table(transport))


def _signal_own(transport: Transport, pid: int, signal_name: str) -> bool:
    """Signal the process group `pid` leads (pgbench's wrapper and pg_ctl's postmaster both lead
    one), or the single process if it leads none. True if something was there to signal.

    As benchlab's unprivileged user, who runs them: their PIDs come from files that user
    writes, and a forged one must not reach anybody else's process."""
    return signal_as_run_user(transport, f"-{pid}", signal_name) or signal_as_run_user(transport, str(pid), signal_name)


def stop_own_processes(transport: Transport, pids: Sequence[int], grace_seconds: float = 10.0) -> None:
    """SIGTERM then SIGKILL the given PIDs (the run's own) and their groups, never anything found by name."""
    signalled = [pid for pid in pids if _signal_own(transport, pid, "TERM")]

    def still_alive() -> list[int]:
        return [pid for pid in signalled if _signal_own(transport, pid, "0")]

    if signalled and not wait_until(lambda: not still_alive(), grace_seconds, 0.5):
        for pid in still_alive():
            _signal_own(transport, pid, "KILL")


def unmount_reliably(
    transport: Transport, mountpoint: str, own_pids: Sequence[int] = (), attempts: int = 20, pause: float = 0.5
) -> None:
    """Unmount, retrying while busy; if still busy, stop our own processes and retry."""
    for attempt in range(attempts):
        if not is_mounted(transport, mountpoint):
            break
        result = transport.run(["umount", mountpoint], check=False)
        if result.exit_status == 0:
            break
        if attempt == attempts // 2 and own_pids:
            stop_own_processes(transport, own_pids)
        time.sleep(pause)
    else:
        users = transport.run(["fuser", "-vm", mountpoint], check=False)
        raise LabError(f"cannot unmount {mountpoint}: still busy\n{users.stderr.strip()}")
    transport.run(["rmdir", mountpoint], check=False)
