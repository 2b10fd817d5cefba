"""The lab layer's side of a run's seed, its state before measuring and its cleanup, on a fake host:
pgbench's --random-seed, the state's checks, the settle pause, and a thrown-away cluster stopped
immediately and removed (a kept one never)."""

from collections.abc import Callable

import pytest

from runs.lab.benchmark.state import settle
from runs.lab.errors import InvalidOption
from runs.lab.options import RunOptions, StateBefore
from runs.lab.pgbench.commands import Connection, run_command
from runs.lab.postgres.cluster import Cluster, running_cluster
from runs.lab.storage.kept import keep_setup
from runs.lab.storage.prepare import PreparedStorage
from runs.lab.transport.interface import Command, CommandResult, Transport


class FakeHost(Transport):
    """Answers every command with `answer(argv)` (exit status, stdout) and records it."""

    label = "lab1"

    def __init__(self, answer: Callable[[list[str]], tuple[int, str]]) -> None:
        self.answer = answer
        self.calls: list[list[str]] = []

    def execute(self, command: Command) -> CommandResult:
        self.calls.append(list(command.argv))
        status, stdout = self.answer(list(command.argv))
        return CommandResult(command.line, status, stdout, "")

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        pass

    def close(self) -> None:
        pass


def test_the_seed_reaches_pgbenchs_command_line_only_when_there_is_one() -> None:
    connection = Connection(host="/s", port=5432, database="bench", user="bench")

    seeded = run_command("/pg/bin", connection, RunOptions(random_seed=42), "/run")
    unseeded = run_command("/pg/bin", connection, RunOptions(), "/run")

    assert "--random-seed=42" in seeded
    assert not any(word.startswith("--random-seed") for word in unseeded)
    with pytest.raises(InvalidOption, match="random seed must be a whole number from 0 to 2"):
        RunOptions(random_seed=-1).validate()


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (StateBefore(cache="tepid"), "the cache state must be one of warm, cold, not 'tepid'"),
        (StateBefore(data="old"), "the data state must be one of reused, fresh, frozen, not 'old'"),
        (StateBefore(settle_s=601), "the settle pause must be between 0 and 600 s"),
    ],
)
def test_a_state_it_cannot_bring_about_is_refused(state: StateBefore, message: str) -> None:
    with pytest.raises(InvalidOption, match=message):
        state.validate()


def diskstats(sectors_written: int, in_flight: int = 0) -> str:
    fields = [7, 0, "loop3", 10, 0, 80, 5, 3, 0, sectors_written, 9, in_flight, 12, 14, 0, 0, 0, 0]
    return "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0\n" + " ".join(map(str, fields)) + "\n"


def test_it_settles_once_the_device_is_quiet_for_a_second_and_waits_no_longer_than_asked() -> None:
    written = iter(range(0, 10**6, 8))
    quiet = FakeHost(lambda argv: (0, diskstats(1000)))
    busy = FakeHost(lambda argv: (0, diskstats(next(written))))
    unknown = FakeHost(lambda argv: (0, diskstats(1000).replace("loop3", "loop9")))

    assert 1.0 <= settle(quiet, "loop3", 5.0) < 2.0
    assert 0.6 <= settle(busy, "loop3", 0.6) < 1.2
    assert settle(unknown, "loop3", 5.0) < 0.5  # a device the kernel does not list: nothing to wait for
    assert settle(quiet, None, 5.0) == 0.0 and settle(quiet, "loop3", 0) == 0.0


def postmaster(alive: list[bool]) -> Callable[[list[str]], tuple[int, str]]:
    """A host whose postmaster (PID 4242) runs while alive[0]; pg_ctl stop ends it."""

    def answer(argv: list[str]) -> tuple[int, str]:
        if "kill" in argv and "-0" in argv:
            return (0 if alive[0] else 1), ""
        if "stop" in argv:
            alive[0] = False
        if "ss" in argv:
            return 0, ""
        if "cat" in argv and argv[-1].endswith("postmaster.pid"):
            return 0, "4242\n"
        if "psql" in " ".join(argv):
            return 0, "[]" if "json_agg" in " ".join(argv) else "PostgreSQL 15"
        return 0, ""

    return answer


def test_a_thrown_away_cluster_stops_immediately_and_its_data_goes_before_the_unmount() -> None:
    host = FakeHost(postmaster([True]))
    cluster = Cluster(bin_dir="/pg/bin", base_dir="/mnt/benchlab/benchlab-run-1/postgres", port=0)

    with running_cluster(host, cluster, {}):
        pass

    stops = [argv for argv in host.calls if "stop" in argv]
    assert len(stops) == 1 and stops[0][stops[0].index("-m") + 1] == "immediate"
    removed = [argv for argv in host.calls if "rm" in argv]
    assert removed and removed[0][-1] == cluster.data_dir and "--one-file-system" in removed[0]


def test_a_kept_cluster_is_stopped_fast_and_keeps_its_data() -> None:
    alive = [True]
    host = FakeHost(postmaster(alive))
    cluster = Cluster(bin_dir="/pg/bin", base_dir="/mnt/benchlab/benchlab-run-1/postgres", port=0)

    storage = PreparedStorage(mountpoint="/mnt/benchlab/benchlab-run-1", fstype="ext4", device_node="/dev/loop3",
                              mount_options="rw,relatime", mkfs_command="mkfs.ext4 -F -q /dev/loop3")  # fmt: skip

    with running_cluster(host, cluster, {}):
        kept = keep_setup(host, storage, cluster, "bench", 1)

    stops = [argv for argv in host.calls if "stop" in argv]
    assert [argv[argv.index("-m") + 1] for argv in stops] == ["fast"]
    assert not [argv for argv in host.calls if "rm" in argv]
    assert kept is not None and storage.keep and cluster.kept
