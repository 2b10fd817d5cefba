"""The host's tuning and the device's queue from hand-made sysfs and /proc text
(runs/lab/parse/tuning.py): what a real host, a VM and a laptop show."""

import pytest

from runs.lab.parse.tuning import (
    DeviceQueue,
    HostTuning,
    boost_from,
    device_queue_from,
    governor_from,
    host_tuning_from,
    selected_choice,
)


def host_output(**sections: str) -> str:
    """As runs/lab/host/tuning.py's snippet prints it: every marker, a file's text after it."""
    names = ("governors", "boost", "no_turbo", "policy_boost", "smt", "thp", "swappiness", "numa")
    return "".join(f"=={name}\n{sections.get(name, '')}" for name in names)


def test_a_tuned_bare_metal_host() -> None:
    output = host_output(
        governors="performance\n" * 8,
        boost="0\n",
        smt="1\n",
        thp="always madvise [never]\n",
        swappiness="10\n",
        numa="/sys/devices/system/node/node0\n/sys/devices/system/node/node1\n",
    )

    assert host_tuning_from(output) == HostTuning(
        governor="performance", boost=False, smt=True, thp="never", swappiness=10, numa_nodes=2
    )


def test_a_vm_without_cpufreq_says_nothing_about_governor_and_boost() -> None:
    # This workplace's VM: /sys/devices/system/cpu/cpufreq is empty, SMT "notsupported" (active 0).
    output = host_output(smt="0\n", thp="always [madvise] never\n", swappiness="60\n", numa="/sys/.../node0\n")

    assert host_tuning_from(output) == HostTuning(
        governor=None, boost=None, smt=False, thp="madvise", swappiness=60, numa_nodes=1
    )


def test_nothing_readable_is_all_unknown_not_off() -> None:
    assert host_tuning_from("") == HostTuning()
    assert host_tuning_from(host_output(swappiness="sixty\n", smt="forceoff\n")) == HostTuning()


def test_cpus_on_different_governors_are_mixed() -> None:
    assert governor_from("powersave\nperformance\npowersave\n") == "mixed"
    assert governor_from("schedutil\n") == "schedutil"
    assert governor_from("\n") is None


@pytest.mark.parametrize(
    ("boost", "no_turbo", "policies", "expected"),
    [
        ("1\n", "", "", True),  # acpi-cpufreq, amd-pstate passive: boost on
        ("0\n", "", "", False),
        ("", "0\n", "", True),  # intel_pstate: turbo allowed
        ("", "1\n", "", False),  # intel_pstate: no_turbo set
        ("", "", "1\n1\n", True),  # per-policy boost (amd-pstate-epp on newer kernels), all agree
        ("", "", "1\n0\n", None),  # they disagree: neither
        ("", "", "", None),  # a VM
    ],
)
def test_boost_from_acpi_intel_pstate_and_per_policy_files(
    boost: str, no_turbo: str, policies: str, expected: bool | None
) -> None:
    assert boost_from(boost, no_turbo, policies) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[mq-deadline] none\n", "mq-deadline"),
        ("none [mq-deadline] kyber bfq\n", "mq-deadline"),
        ("[none] mq-deadline kyber bfq\n", "none"),  # a loop device
        ("none\n", "none"),  # a device with no scheduler to choose shows its one value bare
        ("always [madvise] never\n", "madvise"),
        ("mq-deadline none\n", None),  # nothing selected: not known
        ("", None),
    ],
)
def test_the_selected_choice_of_a_sysfs_choice_file(text: str, expected: str | None) -> None:
    assert selected_choice(text) == expected


def test_a_device_queue_with_a_volatile_write_cache() -> None:
    output = "==write_cache\nwrite back\n==scheduler\n[none] mq-deadline kyber bfq\n"

    assert device_queue_from(output) == DeviceQueue(write_cache="write back", scheduler="none")


def test_a_device_without_a_write_cache_file_and_tmpfs_have_none() -> None:
    assert device_queue_from("==write_cache\n==scheduler\nnone [mq-deadline]\n") == DeviceQueue(
        write_cache=None, scheduler="mq-deadline"
    )
    assert device_queue_from("") == DeviceQueue()  # the snippet prints nothing for a name sysfs lacks
