"""A host's tuning and a device's queue as sysfs and /proc show them (runs/lab/host/tuning.py
reads them): what sets a host against stable numbers (a powersave governor, boost, SMT,
transparent huge pages, swappiness, NUMA) and what makes a device's writes volatile or
reordered (write cache, I/O scheduler). Pure: tested on hand-made text.

Every fact is None when the host does not say: a VM has no cpufreq directory (no governor, no
boost), an old kernel no smt/ directory, tmpfs no block device. None means "not known", never
"off".
"""

from dataclasses import asdict, dataclass

from runs.lab.parse.sections import split_sections


@dataclass(frozen=True)
class HostTuning:
    governor: str | None = None  # cpu0's scaling_governor; "mixed" when the CPUs differ
    boost: bool | None = None  # turbo / boost allowed
    smt: bool | None = None  # hyper-threading active
    thp: str | None = None  # transparent huge pages: always, madvise, never
    swappiness: int | None = None
    numa_nodes: int | None = None

    def as_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class DeviceQueue:
    write_cache: str | None = None  # "write back" (volatile) or "write through"
    scheduler: str | None = None  # the selected one: mq-deadline, none, bfq, kyber...

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def selected_choice(text: str) -> str | None:
    """The kernel's selected value of a choice file: "none [mq-deadline] kyber" → "mq-deadline",
    "always [madvise] never" → "madvise". A file with one choice may show it without brackets."""
    words = text.split()
    chosen = [word[1:-1] for word in words if len(word) > 2 and word.startswith("[") and word.endswith("]")]
    if len(chosen) == 1:
        return chosen[0]
    return words[0] if len(words) == 1 and "[" not in words[0] else None


def governor_from(text: str) -> str | None:
    """One scaling_governor per line, one per CPU that has cpufreq: the one they share, or
    "mixed"; None without cpufreq (VMs, most containers)."""
    governors = {line.strip() for line in text.splitlines() if line.strip()}
    if not governors:
        return None
    return governors.pop() if len(governors) == 1 else "mixed"


def flag_from(text: str) -> bool | None:
    """A sysfs 0/1 file."""
    word = text.strip()
    return {"1": True, "0": False}.get(word)


def whole_number(text: str) -> int | None:
    word = text.strip()
    return int(word) if word.isdigit() else None


def boost_from(boost: str, no_turbo: str, policy_boosts: str) -> bool | None:
    """Whether the CPUs may run above their base clock. acpi-cpufreq and amd-pstate say so in
    cpufreq/boost (1: on); intel_pstate in intel_pstate/no_turbo (1: off); newer kernels also
    per policy (cpufreq/policyN/boost), which count only when every policy agrees."""
    if (global_boost := flag_from(boost)) is not None:
        return global_boost
    if (no_turbo_flag := flag_from(no_turbo)) is not None:
        return not no_turbo_flag
    per_policy = {flag_from(line) for line in policy_boosts.splitlines() if line.strip()}
    return per_policy.pop() if len(per_policy) == 1 else None


def numa_nodes_from(text: str) -> int | None:
    """The node directories listed, one a line; None when the kernel has none (no NUMA support
    compiled in): then the count is not known from here."""
    count = sum(1 for line in text.splitlines() if line.strip())
    return count or None


def host_tuning_from(output: str) -> HostTuning:
    """HostTuning from the output of runs/lab/host/tuning.py's snippet; a section that is
    missing or unreadable leaves its fact None."""
    found = split_sections(output)
    return HostTuning(
        governor=governor_from(found.get("governors", "")),
        boost=boost_from(found.get("boost", ""), found.get("no_turbo", ""), found.get("policy_boost", "")),
        smt=flag_from(found.get("smt", "")),
        thp=selected_choice(found.get("thp", "")),
        swappiness=whole_number(found.get("swappiness", "")),
        numa_nodes=numa_nodes_from(found.get("numa", "")),
    )


def device_queue_from(output: str) -> DeviceQueue:
    """DeviceQueue from the output of runs/lab/host/tuning.py's device snippet."""
    found = split_sections(output)
    cache = " ".join(found.get("write_cache", "").split())
    return DeviceQueue(write_cache=cache or None, scheduler=selected_choice(found.get("scheduler", "")))
