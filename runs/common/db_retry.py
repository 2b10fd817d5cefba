"""Writes that outlast a restart of benchlab's own PostgreSQL.

A worker drives a run for hours; a database restart in the meantime breaks its connection, and
the next query raises. pgbench runs detached on the lab host and its output waits in a file, so
a worker that waits and retries loses nothing; one that gives up fails a run that was fine.
"""

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRY_FOR_S = 300.0  # a restart, a failover: not an outage that outlives the run anyway


def with_database_retry(action: Callable[[], T], what: str, retry_for_s: float = RETRY_FOR_S) -> T:
    """action(), again on a fresh connection while the database is unreachable, backing off
    from 0.5 s to 10 s, for up to retry_for_s; then its error. Only for what is safe to repeat
    (an upsert, a conditional update, a read) and outside a transaction, which would be lost."""
    if connection.in_atomic_block:
        return action()  # a broken transaction cannot be resumed: its caller's caller retries
    deadline = time.monotonic() + retry_for_s
    pause = 0.5
    while True:
        try:
            return action()
        except (OperationalError, InterfaceError) as exc:
            if time.monotonic() + pause > deadline:
                raise
            log.warning("%s: benchlab's database is unreachable (%s); again in %.1f s", what, exc, pause)
            connection.close()  # the next query opens a new connection
            time.sleep(pause)
            pause = min(pause * 2, 10.0)
