"""The host as it is now, for the checklist before a campaign (runs.method): its tuning and what
else it is doing, read as a run reads them (tuning.py, activity.py), outside any run.

What else it does needs two samples of /proc some time apart (activity.py says why): a probe
takes one before and one after its own reads and adds no wait; a check on its own waits a
second between them.

benchlab's own work is left out as in a run: the run user's processes (a run in progress on the
host: the load average still shows it), the sampling shell, and the SSH session serving the
reads with whatever benchlab runs over it.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from runs.lab.host.activity import activity_sample
from runs.lab.host.tuning import host_tuning
from runs.lab.parse.activity import during_json
from runs.lab.parse.tuning import HostTuning
from runs.lab.transport.interface import Transport

T = TypeVar("T")
WINDOW_S = 1.0  # at least this long between the two samples: a fifth of a CPU is 20 clock ticks
NO_RUN_DIR = "/nonexistent"  # outside a run there are no collectors' PID files to leave out


@dataclass(frozen=True)
class HostNow:
    read_at: datetime  # benchlab's clock, when the second sample came back
    tuning: HostTuning
    during: dict[str, Any]  # as Run.environment["method"]["during"], over the reading's window

    def as_json(self) -> dict[str, Any]:
        """As Host.facts["now"] keeps it (ARCHITECTURE.md, "Method facts and checks")."""
        return {"read_at": self.read_at.isoformat(), "host": self.tuning.as_json(), "during": self.during}


def host_now_around(transport: Transport, meanwhile: Callable[[], T], window_s: float = WINDOW_S) -> tuple[HostNow, T]:
    """The host's tuning and activity around `meanwhile` (a probe's other reads): one sample
    before it, one after it and at least `window_s` after the first."""
    start = activity_sample(transport, NO_RUN_DIR)
    began = time.monotonic()
    found = meanwhile()
    tuning = host_tuning(transport)
    rest = window_s - (time.monotonic() - began)
    if rest > 0:
        time.sleep(rest)
    end = activity_sample(transport, NO_RUN_DIR)
    return HostNow(datetime.now(UTC), tuning, during_json(start, end)), found


def host_now(transport: Transport, window_s: float = WINDOW_S) -> HostNow:
    """The host's tuning and activity over the next `window_s` seconds."""
    return host_now_around(transport, lambda: None, window_s)[0]
