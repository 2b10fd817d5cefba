"""The harness-overhead benchmark's pure parts (benchmarks/harness_overhead.py and its
helpers): pairs and their summary, the direct side's command lines and scripts, CPU accounting
from /proc. The benchmark itself runs with `make bench`."""

import math
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import direct_scripts
from benchmarks.direct_pgbench import parse_setup_output, settings_difference, started_epoch
from benchmarks.direct_scripts import Recorded, retargeted, setup_script
from benchmarks.pairs import cpu_medians, crossover_estimate, harness_cpu_pct, pair_order, ratio_summary
from benchmarks.process_cpu import CLOCK_TICKS, Sample, machine_ticks, parse_stat, window_between

RUN_DIR = "/var/lib/benchlab/runs/run-7-0123456789ab"
SOCKET = "/mnt/benchlab/benchlab-run-7-0123456789ab/postgres/socket"
ENVIRONMENT: dict[str, Any] = {
    "device": {"node": "/dev/loop12"},
    "filesystem": {
        "type": "ext4",
        "mkfs_command": "mkfs.ext4 -F -q /dev/loop12",
        "mount_options_requested": "noatime",
        "mount_options": "rw,noatime",
    },
    "postgresql": {
        "bin_dir": "/usr/lib/postgresql/15/bin",
        "non_default_settings": {"port": "54321", "unix_socket_directories": SOCKET, "listen_addresses": ""},
    },
    "init_command": f"/usr/lib/postgresql/15/bin/pgbench -i -s 5 -h {SOCKET} -p 54321 -U bench bench",
    "pgbench": {
        "command": f"/usr/lib/postgresql/15/bin/pgbench -h {SOCKET} -p 54321 -U bench -b tpcb-like -c 4 -j 2 "
        f"-M simple -T 20 --progress=1 -l --log-prefix={RUN_DIR}/work/pgbench_log bench"
    },
}
PLACE = direct_scripts.Place("abc123")


def test_it_alternates_which_side_goes_first() -> None:
    orders = [pair_order(index, ("benchlab", "direct")) for index in range(4)]

    assert orders == [("benchlab", "direct"), ("direct", "benchlab")] * 2


def test_it_summarises_pair_ratios_by_nearest_rank() -> None:
    # Sorted: 0.95, 0.98, 0.99, 1.00, 1.03 — median the third, quartiles the second and fourth.
    summary = ratio_summary([1.00, 0.95, 1.03, 0.99, 0.98], target=0.99)

    assert summary["median_ratio"] == 0.99 and summary["meets"] is True
    assert (summary["min_ratio"], summary["max_ratio"]) == (0.95, 1.03)
    assert (summary["q1_ratio"], summary["q3_ratio"]) == (0.98, 1.00)
    assert summary["iqr"] == pytest.approx(0.02)


def test_it_misses_when_the_median_pair_is_below_the_target() -> None:
    summary = ratio_summary([0.97, 1.02, 0.985, 0.99, 0.96, 1.01], target=0.99)

    # Six pairs: nearest rank takes the lower middle, 0.985.
    assert summary["median_ratio"] == 0.985 and summary["meets"] is False
    assert "crossover" not in summary and summary["resolved"] is False  # not told the order: the median decides


def test_the_crossover_estimate_and_its_interval_by_hand() -> None:
    # Log ratios 0.02 and 0.04 with benchlab first, -0.02 and 0.00 with the direct side first:
    # means 0.03 and -0.01, estimate 0.01; each mean's variance 0.0002 / 2 = 0.0001, standard
    # error sqrt(0.0002) / 2 = 0.0070711 with Welch's 2 degrees of freedom, t(0.975, 2) = 4.302653:
    # 0.01 ± 0.030425, so exp(0.01) = 1.01005 within exp(-0.020425) .. exp(0.040425).
    ratios = [math.exp(0.02), math.exp(-0.02), math.exp(0.04), math.exp(0.0)]
    firsts = ["benchlab", "direct"] * 2

    crossover = crossover_estimate(ratios, firsts)

    assert crossover is not None
    assert crossover["ratio"] == pytest.approx(1.010050, abs=1e-6)
    assert crossover["low"] == pytest.approx(0.979783, abs=1e-6)
    assert crossover["high"] == pytest.approx(1.041253, abs=1e-6)
    assert crossover["by_first"]["benchlab"] == pytest.approx(math.exp(0.03))
    assert crossover["by_first"]["direct"] == pytest.approx(math.exp(-0.01))


def test_the_verdict_takes_out_the_advantage_of_going_first_in_a_pair() -> None:
    # The RAM disk's 7 pairs of 24 Nov 2026: whichever side went first was about 2 % faster.
    ratios = [1.062, 0.975, 1.007, 0.985, 0.986, 0.964, 1.011]
    firsts = ["benchlab", "direct"] * 3 + ["benchlab"]

    summary = ratio_summary(ratios, target=0.99, firsts=firsts)

    # Geometric means: benchlab first (1.062 * 1.007 * 0.986 * 1.011) ** (1/4) = 1.01612, direct
    # first (0.975 * 0.985 * 0.964) ** (1/3) = 0.97463; sqrt(1.01612 * 0.97463) = 0.99516.
    crossover = summary["crossover"]
    assert crossover["by_first"] == {"benchlab": pytest.approx(1.01612, abs=1e-5),
                                     "direct": pytest.approx(0.97463, abs=1e-5)}  # fmt: skip
    assert crossover["ratio"] == pytest.approx(0.99516, abs=1e-5)
    assert summary["median_ratio"] == 0.986  # the plain median falls on one order's edge
    assert summary["verdict_ratio"] == crossover["ratio"] and summary["meets"] is True
    # Seven pairs this noisy cannot tell 0.99 from 0.98: met, but not resolved.
    assert crossover["low"] < 0.99 < crossover["high"] and summary["resolved"] is False


def test_an_order_effect_does_not_hide_a_real_overhead() -> None:
    # benchlab 3 % slower, and going first in a pair worth 2 %: 0.97 * 1.02 with benchlab first,
    # 0.97 / 1.02 with the direct side first.
    ratios = [0.97 * 1.02, 0.97 / 1.02] * 3
    firsts = ["benchlab", "direct"] * 3

    summary = ratio_summary(ratios, target=0.99, firsts=firsts)

    assert summary["crossover"]["ratio"] == pytest.approx(0.97)
    assert summary["crossover"]["low"] == pytest.approx(0.97)  # pairs that agree exactly: no width
    assert summary["meets"] is False


def test_a_resolved_verdict_needs_the_whole_interval_above_the_target() -> None:
    ratios = [1.004, 1.001, 1.006, 0.999, 1.005, 1.000, 1.003, 1.002]

    summary = ratio_summary(ratios, target=0.99, firsts=["benchlab", "direct"] * 4)

    assert summary["meets"] is True and summary["resolved"] is True
    assert summary["crossover"]["low"] > 0.99


def test_one_pair_of_an_order_gives_no_crossover_estimate() -> None:
    summary = ratio_summary([1.01, 0.98, 1.00], target=0.99, firsts=["benchlab", "direct", "benchlab"])

    assert "crossover" not in summary and summary["verdict_ratio"] == 1.00


def test_the_order_of_every_pair_or_of_none() -> None:
    with pytest.raises(ValueError, match="every pair"):
        ratio_summary([1.0, 0.99, 1.01], target=0.99, firsts=["benchlab", "direct"])


def test_benchlabs_cpu_is_its_processes_less_what_the_same_groups_spend_by_hand() -> None:
    def side(worker: float, iostat: float | None, pgbench: float) -> dict[str, Any]:
        cpu = {"worker": worker, "lab pgbench": pgbench} | ({"lab iostat": iostat} if iostat is not None else {})
        return {"cpu_pct": cpu, "machine_busy_pct": 90.0}

    pairs = [
        {"benchlab": side(0.6, 0.1, 20.0), "direct": side(0.1, None, 21.0)},
        {"benchlab": side(0.5, 0.0, 22.0), "direct": side(0.2, None, 20.0)},
        {"benchlab": side(0.9, 0.2, 21.0), "direct": side(0.1, None, 22.0)},
    ]

    medians = cpu_medians(pairs, ("benchlab", "direct"))

    assert medians["benchlab"] == {"lab iostat": 0.1, "lab pgbench": 21.0, "worker": 0.6,
                                   "machine busy (% of all cores)": 90.0}  # fmt: skip
    assert medians["direct"]["worker"] == 0.1
    assert harness_cpu_pct(medians) == 0.6  # worker 0.6 - 0.1, iostat 0.1; pgbench is not benchlab's


def test_the_direct_command_is_the_recorded_one_with_its_own_socket_and_log_directory() -> None:
    recorded = Recorded.from_environment(ENVIRONMENT)

    command = retargeted(recorded.command, PLACE, log_prefix=True)

    expected = shlex.split(ENVIRONMENT["pgbench"]["command"])
    changed = [(before, after) for before, after in zip(expected, command, strict=True) if before != after]
    assert changed == [
        (SOCKET, "/mnt/benchlab/direct-abc123/postgres/socket"),
        (f"--log-prefix={RUN_DIR}/work/pgbench_log", "--log-prefix=/var/lib/benchlab/direct-abc123/pgbench_log"),
    ]
    init = retargeted(recorded.init_command, PLACE, log_prefix=False)
    assert shlex.join(init) == (
        "/usr/lib/postgresql/15/bin/pgbench -i -s 5 -h /mnt/benchlab/direct-abc123/postgres/socket -p 54321 "
        "-U bench bench"
    )


def test_it_refuses_a_command_it_cannot_point_elsewhere() -> None:
    with pytest.raises(ValueError, match="expected one -h"):
        retargeted(["/usr/bin/pgbench", "-p", "5432", "bench"], PLACE, log_prefix=False)
    with pytest.raises(ValueError, match="not a pgbench command"):
        retargeted(["/usr/bin/psql", "-h", "/tmp"], PLACE, log_prefix=False)


def test_the_setup_makes_the_recorded_storage_and_settings() -> None:
    script = setup_script(Recorded.from_environment(ENVIRONMENT), PLACE)

    assert "\nmkfs.ext4 -F -q /dev/loop12\n" in script
    assert "\nmount -t ext4 -o noatime /dev/loop12 /mnt/benchlab/direct-abc123\n" in script
    conf = ["port = 54321", "unix_socket_directories = '/mnt/benchlab/direct-abc123/postgres/socket'",
            "listen_addresses = ''"]  # fmt: skip
    assert f"printf '%s\\n' {' '.join(shlex.quote(line) for line in conf)} |" in script


def test_it_refuses_a_recorded_mkfs_of_another_device() -> None:
    environment = ENVIRONMENT | {"filesystem": ENVIRONMENT["filesystem"] | {"mkfs_command": "mkfs.ext4 /dev/sda"}}

    with pytest.raises(ValueError, match="unexpected mkfs command"):
        setup_script(Recorded.from_environment(environment), PLACE)


def test_the_measurement_follows_the_setup_and_cleanup_knows_its_places() -> None:
    recorded = Recorded.from_environment(ENVIRONMENT)

    script = direct_scripts.run_script(recorded, PLACE, gap_s=0.75)
    cleanup = direct_scripts.cleanup_argv(recorded, PLACE)

    assert script.index("mkfs.ext4") < script.index(direct_scripts.PGBENCH_FOLLOWS) < script.index("-b tpcb-like")
    assert "/var/lib/benchlab/direct-abc123/loaded 0.750" in script
    assert script.endswith("--log-prefix=/var/lib/benchlab/direct-abc123/pgbench_log bench")
    assert cleanup[-4:] == [
        "/mnt/benchlab/direct-abc123",
        "/mnt/benchlab/direct-abc123/postgres/pgdata",
        "/var/lib/benchlab/direct-abc123",
        "/usr/lib/postgresql/15/bin",
    ]


def test_pgbench_starts_the_given_seconds_after_the_load_ended(tmp_path: Path) -> None:
    loaded = tmp_path / "loaded"
    loaded.write_text(f"{time.time():.6f}\n")

    said = subprocess.run(
        ["sh", "-c", direct_scripts.PAUSE, "sh", str(loaded), "0.3"], capture_output=True, text=True, check=True
    )

    started = started_epoch(said.stderr)
    assert started is not None and 0.3 <= started - float(loaded.read_text()) < 0.6


def test_it_reads_what_the_setup_and_the_measurement_printed() -> None:
    text = (
        "dropping old tables...\ndone in 1.20 s.\nloaded 1700000000.250\nmount_options rw,noatime\n"
        'settings {"port" : "54321", "TimeZone" : "UTC"}\n'
    )

    facts = parse_setup_output(text)

    assert facts.mount_options == "rw,noatime" and facts.loaded_epoch == 1700000000.25
    assert facts.settings == {"port": "54321", "TimeZone": "UTC"}
    assert facts.init_output == "dropping old tables...\ndone in 1.20 s."
    assert started_epoch("mkfs says\nstarted 1700000001.5\nprogress: 1.0 s, 10.0 tps") == 1700000001.5
    assert started_epoch("progress: 1.0 s, 10.0 tps") is None


def test_only_the_socket_directory_may_differ_between_the_sides_settings() -> None:
    benchlab = {"port": "54321", "unix_socket_directories": "/a", "TimeZone": "Etc/UTC"}
    direct = {"port": "54321", "unix_socket_directories": "/b", "TimeZone": "UTC", "work_mem": "8MB"}

    assert settings_difference(benchlab, direct) == {"TimeZone": ("Etc/UTC", "UTC"), "work_mem": (None, "8MB")}


def test_it_parses_proc_stat_lines_whose_command_name_has_spaces() -> None:
    line = "4242 (tail -F (x)) S 4200 4242 4242 0 -1 4194560 120 0 0 0 7 3 11 5 20 0 1 0 98765 8216576 200 184467"

    stat = parse_stat(line)

    assert (stat.pid, stat.comm, stat.state, stat.ppid) == (4242, "tail -F (x)", "S", 4200)
    assert (stat.own_ticks, stat.reaped_ticks, stat.started) == (10, 16, 98765)
    assert machine_ticks("cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n") == (160, 1000)


def test_the_window_counts_each_process_from_the_start_and_the_rest_of_the_host_as_other() -> None:
    ticks = CLOCK_TICKS
    start = Sample(at=0.0, own={(1, 1): ("lab pgbench", 10), (2, 1): ("lab iostat", 1)}, lab_total=100,
                   worker_total=50, machine_busy=1000, machine_total=4000, measuring=True)  # fmt: skip
    end = Sample(at=10.0, own={(1, 1): ("lab pgbench", 10 + 5 * ticks)}, lab_total=100 + 7 * ticks,
                 worker_total=50 + ticks // 10, machine_busy=1000 + 15 * ticks, machine_total=4000 + 20 * ticks,
                 measuring=True)  # fmt: skip
    # iostat exited between the samples, last seen at 1 + ticks/10; a backend was born after the start.
    last_seen = {**end.own, (2, 1): ("lab iostat", 1 + ticks // 10), (3, 9): ("lab postgres", ticks)}

    window = window_between(start, end, last_seen)

    assert window.seconds == 10.0
    assert window.cpu_pct["lab pgbench"] == 50.0  # 5 s of CPU in 10 s
    assert window.cpu_pct["lab iostat"] == 1.0 and window.cpu_pct["lab postgres"] == 10.0
    assert window.cpu_pct["lab total"] == 70.0 and window.cpu_pct["lab other"] == 9.0
    assert window.cpu_pct["worker"] == 1.0
    assert window.cpu_pct["machine, everything else"] == 150.0 - 70.0 - 1.0
    assert window.machine_busy_pct == 75.0
