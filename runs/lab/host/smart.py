"""A device's SMART/NVMe health, read with smartctl (smartmontools 7 or later, for --json) in one
round trip and parsed by runs/lab/parse/smart.py. The device node is an argument, never pasted
into the script. A read never fails: a host without smartctl, or a device without SMART, is a
reading that says so.
"""

from runs.lab.errors import LabError
from runs.lab.parse.smart import SmartHealth, no_smart, smart_from_json
from runs.lab.transport.interface import Transport

# 127 (the shell's "command not found") when smartctl is missing; otherwise smartctl's own
# exit status, a bit mask the parser reads from the JSON itself.
_READ = 'command -v smartctl >/dev/null 2>&1 || exit 127; exec smartctl --json=c -a "$1"'
NOT_INSTALLED = 127
READ_TIMEOUT_S = 60.0  # a drive busy with a self-test can take seconds to answer


def smart_missing(host: str) -> SmartHealth:
    return SmartHealth(none_reason=f"smartctl is not installed on {host} (Debian: apt install smartmontools)")


def read_smart(transport: Transport, node: str) -> SmartHealth:
    """The health of the block device at `node` (/dev/nvme0n1, /dev/sda) on the transport's host."""
    if not node.startswith("/dev/"):
        return no_smart(f"{node} is not a device node (a directory device has no SMART)")
    result = transport.run(["sh", "-c", _READ, "sh", node], check=False, timeout=READ_TIMEOUT_S)
    if result.exit_status == NOT_INSTALLED and not result.stdout.strip():
        return smart_missing(transport.label)
    return smart_from_json(result.stdout)


def read_smart_after_run(transport: Transport, node: str) -> SmartHealth:
    """read_smart for a run that has collected its results: a host that stops answering now costs
    the run nothing but this reading, which says so."""
    try:
        return read_smart(transport, node)
    except LabError as exc:
        return SmartHealth(none_reason=f"the health could not be read: {exc}")
