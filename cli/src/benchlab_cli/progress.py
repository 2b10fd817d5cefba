"""Waiting for jobs to end: a poll loop, and a progress bar on stderr when stderr is a terminal
(a CI log or a pipe gets none: stdout keeps only the result)."""

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from benchlab_cli.errors import CliError, Exit
from benchlab_cli.output import duration

BAR_WIDTH = 24


def bar_line(done: int, total: int, current: str, eta_s: float | None) -> str:
    """ "[#########...............]  3/8 ended · run 45 measuring (clients=2) · ETA 1m20s" """
    filled = BAR_WIDTH * done // total if total else 0
    parts = [f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done:>{len(str(total))}}/{total} ended"]
    if current:
        parts.append(current)
    if eta_s is not None and done < total:
        parts.append(f"ETA {duration(eta_s)}")
    return " · ".join(parts)


class ProgressBar:
    """One line redrawn in place on a terminal."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.last = ""

    def show(self, line: str) -> None:
        if line == self.last:
            return
        # \r returns to the line's start; ESC[K clears what a longer line before it left.
        self.out.write("\r\x1b[K" + line)
        self.out.flush()
        self.last = line

    def close(self) -> None:
        if self.last:
            self.out.write("\n")
            self.out.flush()


def wait_for(
    read: Callable[[], Any],
    ended: Callable[[Any], bool],
    line: Callable[[Any], str],
    *,
    interval_s: float,
    timeout_s: float | None,
    out: TextIO | None = None,
) -> Any:
    """read() every interval_s until ended(what it read); each reading drawn as line(reading) on
    `out` (stderr) when it is a terminal. The last reading; CliError (Exit.TIMEOUT) after timeout_s."""
    out = out or sys.stderr
    bar = ProgressBar(out) if out.isatty() else None
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while True:
            reading = read()
            if bar:
                bar.show(line(reading))
            if ended(reading):
                return reading
            if deadline is not None and time.monotonic() >= deadline:
                raise CliError(f"gave up waiting after {duration(timeout_s)} (--timeout); it goes on", Exit.TIMEOUT)
            time.sleep(interval_s)
    finally:
        if bar:
            bar.close()
