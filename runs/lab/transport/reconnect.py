"""A connection to a lab host that outlives a network blip.

A run talks to its hosts for hours. A link that drops for a few seconds (a switch restarting,
a cable moved) kills the SSH connection, or leaves it hanging until sshd gives up on it. What
the run started on the host goes on regardless (pgbench, the collectors and PostgreSQL run
detached), so a worker that reconnects and carries on loses nothing.

`ReconnectingTransport` does that for every command of every stage: a command that meets a
lost connection is sent again on a new one, backing off from 0.2 s to 5 s, for as long as the
host has been unreachable for less than `give_up_after_s`. Past that it gives up for good: that
call and every later one raise HostUnreachable at once, so the run's cleanup does not wait the
limit out again for each step (the host is cleaned up when it returns, by the worker's side).

Sending a command again is safe for what runs/lab sends over it: reads, checks, `install -d`,
kill, mount and unmount guarded by their checks. A command whose connection died while it ran
may have run once already; the few that cannot run twice (initdb into a used directory, CREATE
ROLE) then fail with their own message instead of doing anything twice. The long ones (pgbench)
are detached and followed by offset (follow.py), never re-run.
"""

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from runs.lab.errors import ConnectFailed, ConnectionLost, HostKeyRefused
from runs.lab.transport.interface import Command, CommandResult, Transport

log = logging.getLogger(__name__)
T = TypeVar("T")
FIRST_PAUSE_S, LONGEST_PAUSE_S = 0.2, 5.0


class HostUnreachable(ConnectionLost):
    """The host did not answer for longer than the run may wait for it."""


class ReconnectingTransport(Transport):
    """A Transport that opens a new connection with `connect` whenever its current one is lost."""

    def __init__(self, connect: Callable[[], Transport], give_up_after_s: float) -> None:
        self.connect = connect
        self.give_up_after_s = give_up_after_s
        self._current: Transport | None = connect()  # the first connection fails at once: nothing started yet
        self.label = self._current.label
        self.gave_up: str | None = None  # why, once the host stayed away too long

    def execute(self, command: Command) -> CommandResult:
        return self._on_a_connection(lambda connection: connection.execute(command))

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        self._on_a_connection(lambda t: t.write_file(remote, content, mode))

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None

    def _on_a_connection(self, action: Callable[[Transport], T]) -> T:
        if self.gave_up:
            raise HostUnreachable(self.gave_up)
        away_since: float | None = None
        pause = FIRST_PAUSE_S
        while True:
            try:
                if self._current is None:
                    self._current = self.connect()
                    log.warning("reconnected to %s", self.label)
                return action(self._current)
            except HostKeyRefused:
                raise  # another machine answers: waiting does not make it the right one
            except (ConnectFailed, ConnectionLost) as exc:
                self._drop()
                away_since = away_since or time.monotonic()
                if time.monotonic() - away_since + pause > self.give_up_after_s:
                    self.gave_up = f"{self.label} was unreachable for more than {self.give_up_after_s:g} s ({exc})"
                    raise HostUnreachable(self.gave_up) from exc
                log.warning("%s: connection lost (%s); trying again in %.1f s", self.label, exc, pause)
                time.sleep(pause)
                pause = min(pause * 2, LONGEST_PAUSE_S)

    def _drop(self) -> None:
        if self._current is not None:
            try:
                self._current.close()
            except Exception:
                log.debug("closing a lost connection to %s failed", self.label, exc_info=True)
            self._current = None
