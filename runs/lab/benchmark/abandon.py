"""What a run leaves on a host when the worker running it died, removed.

A run's worker holds every cleanup in its own process (run_benchmark's ExitStack): if that
process is killed, pgbench and the run's PostgreSQL go on, iostat and vmstat go on until their
own time limit, and the storage stays mounted. Everything a run makes on a host is named after
its run key, so it can be found and removed from another process: the run user's processes
(pgbench, the wrapper, PostgreSQL: a host serves one run at a time), the root collectors
started in the run's directory (their PID files are root's, in root's directory), the
mountpoint, a directory device's run directory, and the run directory itself.
"""

from dataclasses import dataclass, field

from runs.lab.benchmark.metrics import COLLECTORS
from runs.lab.benchmark.run import remove_run_dir, run_dir_for
from runs.lab.errors import LabError
from runs.lab.host.run_user import stop_run_user_processes
from runs.lab.storage.checks import DeviceIdentity, resolved_device_directory
from runs.lab.storage.mounts import is_mounted, unmount_reliably
from runs.lab.storage.prepare import directory_for, mountpoint_for
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached, cancel


@dataclass
class Cleanup:
    """What was found and removed, in words for the run's record."""

    done: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(self.done) or "nothing of the run was left on the host"


def clean_up_abandoned_run(transport: Transport, run_key: str, device: DeviceIdentity) -> Cleanup:
    """Stop and remove what the run with this key left on the host; LabError if something stays."""
    cleanup = Cleanup()
    run_dir = run_dir_for(run_key)
    stop_run_user_processes(transport)
    cleanup.done.append("stopped the run user's processes (pgbench, PostgreSQL)")
    for name in COLLECTORS:
        if stop_collector(transport, run_dir, name):
            cleanup.done.append(f"stopped {name}")
    mountpoint = mountpoint_for(run_key, device)
    if is_mounted(transport, mountpoint):
        unmount_reliably(transport, mountpoint)
        cleanup.done.append(f"unmounted {mountpoint}")
    if device.is_directory:
        own = directory_for(run_key, resolved_device_directory(transport, device))
        if transport.run(["test", "-e", own], check=False).exit_status == 0:
            transport.run(["rm", "-rf", "--one-file-system", "--", own])
            cleanup.done.append(f"removed {own}")
    if transport.run(["test", "-e", run_dir], check=False).exit_status == 0:
        remove_run_dir(transport, run_key)
        cleanup.done.append(f"removed {run_dir}")
    if is_mounted(transport, mountpoint):
        raise LabError(f"{mountpoint} is still mounted on {transport.label}")
    return cleanup


def stop_collector(transport: Transport, run_dir: str, name: str) -> bool:
    """Stop the collector `name` if its wrapper still runs; whether there was one."""
    found = transport.run(["cat", f"{run_dir}/{name}.pid"], check=False)
    pid = found.stdout.strip()
    if found.exit_status != 0 or not (pid.isascii() and pid.isdigit()):
        return False
    done = transport.run(["test", "-e", f"{run_dir}/{name}.exit"], check=False).exit_status == 0
    if not done:
        cancel(transport, Detached(run_dir=run_dir, name=name, pid=int(pid)), grace_s=2.0)
    return not done
