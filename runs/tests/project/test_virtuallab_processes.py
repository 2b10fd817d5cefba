"""The virtual lab signals only its own processes: a PID recorded before a reboot, or reused
since, belongs to somebody else (scripts/virtuallab/processes.py)."""

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from django.conf import settings


def lab_module() -> ModuleType:
    path = Path(settings.BASE_DIR) / "scripts" / "virtuallab" / "processes.py"
    spec = importlib.util.spec_from_file_location("virtuallab_processes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_a_process_is_known_by_its_boot_and_start_time() -> None:
    lab = lab_module()
    process = subprocess.Popen(["sleep", "30"])
    try:
        identity = lab.process_identity(process.pid)
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()

        assert identity.startswith(f"{boot}:") and identity.split(":")[1].isdigit()
        assert lab.pid_alive(process.pid, identity)
        # The same PID with another start time (a reused PID, or one from before a reboot).
        assert not lab.pid_alive(process.pid, f"{boot}:1")
        assert not lab.pid_alive(process.pid, f"another-boot:{identity.split(':')[1]}")

        lab.stop_pid(process.pid, f"{boot}:1")  # not ours: left alone
        assert process.poll() is None
        lab.stop_pid(process.pid, identity, timeout=5)
        assert process.wait(timeout=5) is not None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
