"""ReconnectingTransport's rules, with the network faked (the lab tests cut a real link:
test_network_loss.py): a lost connection is opened again and the command sent again; a host
away for longer than the limit is given up on, once, and every later call fails at once."""

import logging

import pytest

from runs.lab.errors import CommandFailed, ConnectFailed, ConnectionLost, HostKeyRefused
from runs.lab.transport import reconnect
from runs.lab.transport.interface import Command, CommandResult, Transport
from runs.lab.transport.reconnect import HostUnreachable, ReconnectingTransport


class FakeConnection(Transport):
    """One connection: answers commands until told it is lost."""

    def __init__(self, network: "FakeNetwork") -> None:
        self.network, self.label, self.closed = network, "root@lab1", False

    def execute(self, command: Command) -> CommandResult:
        if self.network.down or self.network.lose_next_command or self.closed:
            self.network.lose_next_command = False
            raise ConnectionLost("lost the SSH connection to root@lab1")
        self.network.commands.append(list(command.argv))
        return CommandResult(" ".join(command.argv), 0, "ok\n", "")

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        self.run(["write", remote])

    def close(self) -> None:
        self.closed = True


class FakeNetwork:
    def __init__(self) -> None:
        self.down = False
        self.lose_next_command = False
        self.refuse_key = False
        self.connects = 0
        self.commands: list[list[str]] = []
        self.clock = 0.0  # seconds; moves only when the transport sleeps
        self.back_at = float("inf")  # when a network that is down comes back

    def connect(self) -> FakeConnection:
        self.connects += 1
        if self.refuse_key:
            raise HostKeyRefused("root@lab1", "ssh-ed25519 SHA256:other", ["ssh-ed25519 SHA256:pinned"])
        if self.down:
            raise ConnectFailed("cannot connect to root@lab1: timed out")
        return FakeConnection(self)


class FakeTime:
    def __init__(self, network: FakeNetwork) -> None:
        self.network = network

    def monotonic(self) -> float:
        return self.network.clock

    def sleep(self, seconds: float) -> None:
        self.network.clock += seconds
        if self.network.clock >= self.network.back_at:
            self.network.down = False


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> FakeNetwork:
    """The network, and the transport's clock faked with it: no real waiting."""
    fake = FakeNetwork()
    monkeypatch.setattr(reconnect, "time", FakeTime(fake))
    return fake


def test_a_command_on_a_lost_connection_is_sent_again_on_a_new_one(network: FakeNetwork) -> None:
    transport = ReconnectingTransport(network.connect, give_up_after_s=60)
    network.lose_next_command = True

    result = transport.run(["cat", "/proc/mounts"])

    assert result.stdout == "ok\n" and network.commands == [["cat", "/proc/mounts"]]
    assert (network.connects, transport.gave_up) == (2, None)


def test_a_host_away_for_a_while_is_waited_for_with_growing_pauses(
    network: FakeNetwork, caplog: pytest.LogCaptureFixture
) -> None:
    transport = ReconnectingTransport(network.connect, give_up_after_s=60)
    network.down, network.back_at = True, 15.0

    with caplog.at_level(logging.WARNING):
        transport.write_file("/var/lib/benchlab/runs/x/resume.json", b"{}")

    assert network.commands == [["write", "/var/lib/benchlab/runs/x/resume.json"]]
    pauses = [float(r.message.rsplit(" ", 2)[-2]) for r in caplog.records if "trying again in" in r.message]
    assert pauses[:6] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0] and set(pauses[6:]) <= {5.0}
    assert 15.0 <= network.clock < 20.0  # back within one pause of the host's return


def test_a_host_away_past_the_limit_is_given_up_on_once_and_for_every_later_call(network: FakeNetwork) -> None:
    transport = ReconnectingTransport(network.connect, give_up_after_s=30)
    network.down = True

    with pytest.raises(HostUnreachable, match=r"root@lab1 was unreachable for more than 30 s \(cannot connect"):
        transport.run(["kill", "-0", "--", "-4711"])
    waited, connects = network.clock, network.connects
    network.down = False  # back, but the run has failed already: its cleanup must not wait again
    with pytest.raises(HostUnreachable):
        transport.run(["umount", "/mnt/benchlab/x"])

    assert 25.0 <= waited <= 30.0
    assert (network.clock, network.connects, network.commands) == (waited, connects, [])
    assert isinstance(HostUnreachable("x"), ConnectionLost)  # what a run's error handling already knows


def test_a_changed_host_key_is_never_waited_out(network: FakeNetwork) -> None:
    transport = ReconnectingTransport(network.connect, give_up_after_s=300)
    network.lose_next_command, network.refuse_key = True, True

    with pytest.raises(HostKeyRefused):
        transport.run(["true"])
    assert network.clock == reconnect.FIRST_PAUSE_S and network.connects == 2  # one pause, then no more


def test_the_first_connection_fails_at_once_and_a_failing_command_is_not_repeated(network: FakeNetwork) -> None:
    network.down = True
    with pytest.raises(ConnectFailed):
        ReconnectingTransport(network.connect, give_up_after_s=300)
    assert network.clock == 0.0

    network.down = False
    transport = ReconnectingTransport(network.connect, give_up_after_s=300)
    transport._current.execute = lambda command: (_ for _ in ()).throw(  # type: ignore[union-attr, method-assign]
        CommandFailed("false", 1, "", "no", "root@lab1")
    )
    with pytest.raises(CommandFailed):
        transport.run(["false"])
    assert network.connects == 2  # the refused one and this one: a command that failed is its own answer
