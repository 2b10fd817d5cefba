"""The host's tuning and the device's queue as they are when a run measures: each read in one
round trip, parsed by runs/lab/parse/tuning.py. Fixed snippets; the device's kernel name is an
argument, never pasted into the script.

A file that is missing is left out of the output (its fact is then None): a read never fails.
"""

import re

from runs.lab.parse.tuning import DeviceQueue, HostTuning, device_queue_from, host_tuning_from
from runs.lab.transport.interface import Transport

_HOST = (
    "c=/sys/devices/system/cpu; "
    'echo "==governors"; cat $c/cpu[0-9]*/cpufreq/scaling_governor 2>/dev/null; '
    'echo "==boost"; cat $c/cpufreq/boost 2>/dev/null; '
    'echo "==no_turbo"; cat $c/intel_pstate/no_turbo 2>/dev/null; '
    'echo "==policy_boost"; cat $c/cpufreq/policy[0-9]*/boost 2>/dev/null; '
    'echo "==smt"; cat $c/smt/active 2>/dev/null; '
    'echo "==thp"; cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; '
    'echo "==swappiness"; cat /proc/sys/vm/swappiness 2>/dev/null; '
    'echo "==numa"; ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null; true'
)
# The queue/ directory is the whole disk's: a partition (sda1, nvme0n1p2) has none of its own,
# so its parent's is read. A loop device or a device-mapper device is a whole disk with its own.
_DEVICE = (
    's=/sys/class/block/$1; [ -e "$s" ] || exit 0; '
    '[ -e "$s/partition" ] && s=$(readlink -f "$s/.."); '
    'echo "==write_cache"; cat "$s/queue/write_cache" 2>/dev/null; '
    'echo "==scheduler"; cat "$s/queue/scheduler" 2>/dev/null; true'
)
_KERNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._!-]*")  # loop3, sda1, nvme0n1p2, dm-0


def host_tuning(transport: Transport) -> HostTuning:
    return host_tuning_from(transport.run(["sh", "-c", _HOST], check=False).stdout)


def device_queue(transport: Transport, kernel_name: str | None) -> DeviceQueue:
    """The write cache and I/O scheduler of the block device the kernel calls `kernel_name`
    (iostat's name of the storage under test); both None for tmpfs (no device)."""
    if kernel_name is None or not _KERNEL_NAME.fullmatch(kernel_name):
        return DeviceQueue()
    return device_queue_from(transport.run(["sh", "-c", _DEVICE, "sh", kernel_name], check=False).stdout)
