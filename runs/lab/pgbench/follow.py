"""Follow a detached command's output file by byte offset, across lost connections.

`tail --pid` streams the file from an offset and ends by itself once the command has
exited and everything is printed. Only complete lines advance the offset, so after a
reconnect the follower resumes exactly where it was: no line lost, none repeated.
"""

import logging
import shlex
import time
from collections.abc import Callable

from runs.lab.errors import CommandFailed, CommandTimeout, ConnectFailed, ConnectionLost, HostKeyRefused, LabError
from runs.lab.transport.interface import Transport, clean_text
from runs.lab.transport.process import Detached, exit_status, start_detached, wait_for_exit

log = logging.getLogger(__name__)


class Follower:
    def __init__(
        self,
        connect: Callable[[], Transport],
        process: Detached,
        suffix: str,
        on_line: Callable[[str], None],
        offset: int = 0,
        max_reconnect_s: float = 300.0,
        on_offset: Callable[[int], None] | None = None,
        path: str | None = None,
    ) -> None:
        self.connect = connect
        self.process = process
        # Its own output file, or another file followed for as long as it runs (the server log).
        self.path = path or process.path(suffix)
        self.on_line = on_line
        self.offset = offset  # bytes of complete lines delivered so far
        self.max_reconnect_s = max_reconnect_s
        self.transport: Transport | None = None
        self.on_offset = on_offset  # told the offset after each line: where another follower would go on

    def _deliver(self, line: str) -> None:
        # Exact bytes, even for a line that is not valid UTF-8 (see transport.LineCallback).
        self.offset += len(line.encode(errors="surrogateescape")) + 1
        self.on_line(clean_text(line))
        if self.on_offset is not None:
            self.on_offset(self.offset)

    def _reconnect(self) -> Transport:
        deadline = time.monotonic() + self.max_reconnect_s
        pause = 0.2
        while True:
            try:
                return self.connect()
            except HostKeyRefused:
                raise  # a changed key does not fix itself by waiting
            except ConnectFailed as exc:
                if time.monotonic() > deadline:
                    raise LabError(f"gave up reconnecting to follow {self.path}: {exc}") from exc
                log.warning("reconnecting to follow %s: %s", self.path, exc)
                time.sleep(pause)
                pause = min(pause * 2, 5.0)

    def follow(self, timeout_s: float | None = None) -> int:
        """Deliver every line until the command has exited; return the final offset.

        With timeout_s, give up (LabError) if the command still runs after that long: a
        pgbench stuck on a hung disk must not hold the worker for ever."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while True:
                if self.transport is None:
                    self.transport = self._reconnect()
                try:
                    # Once the command has finished, read the rest and stop: its PID may belong to
                    # another process by now, and `tail --pid` would wait on that one.
                    if exit_status(self.transport, self.process) is not None:
                        rest = self.process.command(["tail", "-c", f"+{self.offset + 1}", self.path])
                        self.transport.run(rest, on_stdout=self._deliver)
                        return self.offset
                    # -s: how often tail checks whether the PID is still there.
                    argv = ["tail", f"--pid={self.process.pid}", "-s", "0.2", "-c", f"+{self.offset + 1}", "-F"]
                    remaining = None if deadline is None else max(1.0, deadline - time.monotonic())
                    self.transport.run(
                        self.process.command([*argv, self.path]), timeout=remaining, on_stdout=self._deliver
                    )
                    return self.offset
                except CommandTimeout as exc:
                    raise LabError(
                        f"{self.process.name} (PID {self.process.pid}) still runs after {timeout_s:g} s"
                    ) from exc
                except ConnectionLost as exc:
                    log.warning("lost the connection while following %s at byte %d: %s", self.path, self.offset, exc)
                    self.transport.close()
                    self.transport = None
        finally:
            if self.transport is not None:  # the follower's own connection, not the caller's
                self.transport.close()
                self.transport = None


def run_followed(
    transport: Transport,
    connect: Callable[[], Transport],
    argv: list[str],
    place: Detached,
    on_line: Callable[[str], None],
    on_started: Callable[[Detached], None],
    timeout_s: float,
    max_reconnect_s: float = 300.0,
    stream: str = "stderr",
) -> str:
    """Run a long command (`pgbench -i`) detached, in place.run_dir as place.user, and follow its
    stderr (`stream`) to the end across lost connections; its whole output, or CommandFailed.

    Unlike a command run on the connection, it survives a network blip, and it can be stopped at
    once: on_started gets it, and pgbench.cancel() ends its whole session."""
    process = start_detached(transport, argv, place.run_dir, place.name, user=place.user)
    on_started(process)
    Follower(connect, process, stream, on_line, max_reconnect_s=max_reconnect_s).follow(timeout_s)
    status = wait_for_exit(transport, process, 60)  # it has exited: the status is on its way
    stdout, stderr = (transport.run(process.command(["cat", process.path(s)])).stdout for s in ("stdout", "stderr"))
    if status != 0:
        raise CommandFailed(shlex.join(argv), status, stdout, stderr, transport.label)
    return stdout + stderr
