"""A running run's sign of life, so that a second delivery of its task can tell a run whose
worker is still at it from one whose worker died.

With late acks, Redis hands a task to another worker when the first has not acknowledged it
within the visibility timeout, which a long benchmark outlasts. The worker running a run
stamps `Run.heartbeat_at` from a thread every HEARTBEAT_EVERY_S; a run whose stamp is older
than STALE_AFTER_S has no worker any more.
"""

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.db import DatabaseError, connection
from django.utils import timezone

from runs.models import Run

log = logging.getLogger(__name__)
HEARTBEAT_EVERY_S = 30.0
STALE_AFTER_S = 150.0  # five missed beats


@contextmanager
def run_heartbeat(run: Run, every_s: float = HEARTBEAT_EVERY_S) -> Iterator[None]:
    """Stamp the run's heartbeat now and every `every_s` until the block ends."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while True:
                try:
                    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
                except DatabaseError:  # a blip must not end the heartbeat; the next beat retries
                    log.warning("heartbeat of run %s not stored", run.pk, exc_info=True)
                if stop.wait(every_s):
                    return
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"run-{run.pk}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def run_has_live_worker(run: Run) -> bool:
    return run.heartbeat_at is not None and timezone.now() - run.heartbeat_at < timedelta(seconds=STALE_AFTER_S)
