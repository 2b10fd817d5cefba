"""Waiting for something on a host with a deadline: the one polling loop of the lab layer.

Each caller says what it waits for, how often to look and for how long, and what a timeout
means to it (an error, or the next step of an escalation): that part stays with the caller.
"""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout_s: float, interval_s: float) -> T:
    """check() every interval_s until it answers something other than None or False, and that
    answer (0 and an empty string count: an exit status, an output). Looked at once more at the
    deadline; after it, the last answer (None or False) is returned."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = check()
        remaining = deadline - time.monotonic()
        if (answer is not None and answer is not False) or remaining <= 0:
            return answer
        time.sleep(min(interval_s, remaining))
