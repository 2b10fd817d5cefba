"""A running run's sign of life, so that a second delivery of its task can tell a run whose
worker is still at it from one whose worker died.

With late acks, Redis hands a task to another worker when the first has not acknowledged it
within the visibility timeout, which a long benchmark outlasts. The worker running a run
stamps `Run.heartbeat_at` from a thread every BENCHLAB_HEARTBEAT_EVERY_S; a run whose stamp is
older than BENCHLAB_STALE_AFTER_S has no worker any more (services.sweeper ends it).
"""

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from runs.models import Run
from runs.services.db_retry import with_database_retry

log = logging.getLogger(__name__)


def heartbeat_every_s() -> float:
    return float(settings.BENCHLAB_HEARTBEAT_EVERY_S)


def stale_after_s() -> float:
    """A run silent for longer has no worker any more (several missed beats: a slow database
    write is not a death)."""
    return float(settings.BENCHLAB_STALE_AFTER_S)


@contextmanager
def run_heartbeat(run: Run, every_s: float | None = None) -> Iterator[None]:
    """Stamp the run's heartbeat now and every `every_s` (the setting) until the block ends."""

    def stamp() -> None:
        # The time it is stored, and how far pgbench's output has been stored (RunObserver.followed).
        Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now(), progress_offset=run.progress_offset)

    with beating(stamp, f"run {run.pk}", heartbeat_every_s() if every_s is None else every_s):
        yield


@contextmanager
def beating(stamp: Callable[[], None], what: str, every_s: float) -> Iterator[None]:
    """Call `stamp` (a database write) now and every `every_s` from a thread of its own until the
    block ends: a run's or a build's heartbeat (services.build_execute)."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while True:
                try:
                    # Retried until the next beat is due (a database restart), then left to it:
                    # the job is stale only after several beats. (The block's end waits for a
                    # beat that is retrying, so at most that long.)
                    with_database_retry(stamp, f"heartbeat of {what}", retry_for_s=every_s)
                except DatabaseError:  # a longer outage must not end the heartbeat
                    log.warning("heartbeat of %s not stored", what, exc_info=True)
                    connection.close()  # the next beat opens a new connection
                if stop.wait(every_s):
                    return
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"{what.replace(' ', '-')}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def run_has_live_worker(run: Run) -> bool:
    return run.heartbeat_at is not None and timezone.now() - run.heartbeat_at < timedelta(seconds=stale_after_s())
