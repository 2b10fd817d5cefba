"""The Transport to the machine the worker runs on: subprocess, never a shell, each command
in a process group of its own so that a time limit ends all of it.
"""

import os
import selectors
import signal
import subprocess
import threading
import time
from pathlib import Path

from runs.lab.errors import CommandTimeout, OutputTooLarge
from runs.lab.transport.interface import READ_CHUNK, Command, CommandResult, LineSplitter, Transport, finish


class LocalTransport(Transport):
    """Commands on the machine the worker runs on, through subprocess (no shell)."""

    def __init__(self, label: str = "this machine") -> None:
        self.label = label

    def execute(self, command: Command) -> CommandResult:
        argv, timeout, stdin, line = command.argv, command.timeout, command.stdin, command.line
        out, err = LineSplitter(command.on_stdout), LineSplitter(command.on_stderr)
        try:
            # Its own session, so a timeout can stop the command and everything it started.
            process = subprocess.Popen(
                list(argv),
                cwd=command.cwd,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:  # a missing program: what a shell would say, status 127
            err.feed(f"{argv[0]}: {exc.strerror}\n".encode())
            return finish(self.label, line, 127, out, err, command.check)
        deadline = None if timeout is None else time.monotonic() + timeout
        feeder = self._feed_stdin(process, stdin) if stdin is not None else None
        try:
            try:
                pumped = self._pump(process, out, err, deadline)
            except OutputTooLarge:
                self._kill(process)
                raise
            if not pumped:
                self._kill(process)
                raise CommandTimeout(line, timeout or 0, self.label)
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
            try:
                status = process.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                self._kill(process)
                raise CommandTimeout(line, timeout or 0, self.label) from None
        finally:
            if feeder is not None:
                feeder.join(timeout=5)
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        return finish(self.label, line, status, out, err, command.check)

    @staticmethod
    def _feed_stdin(process: subprocess.Popen[bytes], data: bytes) -> threading.Thread:
        """Write stdin from a thread: a command may read it while we read its output, or not at all."""

        def feed() -> None:
            assert process.stdin is not None
            try:
                process.stdin.write(data)
                process.stdin.close()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the command stopped reading (or ended); what it read is what it gets

        thread = threading.Thread(target=feed, daemon=True)
        thread.start()
        return thread

    def _pump(
        self,
        process: subprocess.Popen[bytes],
        out: LineSplitter,
        err: LineSplitter,
        deadline: float | None,
    ) -> bool:
        """Read both outputs until they close; False if the deadline passed first."""
        assert process.stdout is not None and process.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ, out)
            selector.register(process.stderr, selectors.EVENT_READ, err)
            while selector.get_map():
                if deadline is not None and time.monotonic() > deadline:
                    return False
                for key, _ in selector.select(timeout=0.05):
                    chunk = os.read(key.fd, READ_CHUNK)
                    if chunk:
                        key.data.feed(chunk)
                    else:
                        selector.unregister(key.fileobj)
        return True

    @staticmethod
    def _kill(process: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        path = Path(remote)
        path.write_bytes(content)
        path.chmod(mode)

    def close(self) -> None:
        pass
