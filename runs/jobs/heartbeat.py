"""A running job's sign of life, so that a second delivery of its task can tell a job whose worker
is still at it from one whose worker died.

With late acks, Redis hands a task to another worker when the first has not acknowledged it
within the visibility timeout, which a long benchmark or build outlasts. The worker doing a job
(a run, a PostgreSQL build, a fio baseline) stamps its `heartbeat_at` from a thread every
BENCHLAB_HEARTBEAT_EVERY_S; a job whose stamp is older than BENCHLAB_STALE_AFTER_S has no worker
any more (the sweepers end it: bench.services.sweeper, builds.services.sweeper, baselines.services.sweeper).
"""

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, models
from django.utils import timezone

from runs.common.db_retry import with_database_retry
from runs.jobs.kinds import kind_of

log = logging.getLogger(__name__)


def heartbeat_every_s() -> float:
    return float(settings.BENCHLAB_HEARTBEAT_EVERY_S)


def stale_after_s() -> float:
    """A job silent for longer has no worker any more (several missed beats: a slow database
    write is not a death)."""
    return float(settings.BENCHLAB_STALE_AFTER_S)


def has_live_worker(job: Any) -> bool:
    """Whether a worker stamped the job's heartbeat recently enough to be still at it."""
    stamp = job.heartbeat_at
    return stamp is not None and timezone.now() - stamp < timedelta(seconds=stale_after_s())


@contextmanager
def job_heartbeat(
    job: models.Model,
    fields: Callable[[], dict[str, Any]] = dict,
    *,
    while_in: str | None = None,
    every_s: float | None = None,
) -> Iterator[None]:
    """Stamp the job's heartbeat now and every `every_s` (the setting) until the block ends, with
    `fields()` besides: what its page shows after a reload (a build's progress and log), or how
    far its output has been stored (a run's pgbench output: RunObserver.followed). With
    `while_in`, only while the job is in that state (a job that has ended is not stamped)."""
    rows = type(job)._default_manager.filter(pk=job.pk)
    if while_in is not None:
        rows = rows.filter(state=while_in)

    def stamp() -> None:
        rows.update(heartbeat_at=timezone.now(), **fields())

    with beating(stamp, f"{kind_of(job).name} {job.pk}", heartbeat_every_s() if every_s is None else every_s):
        yield


@contextmanager
def beating(stamp: Callable[[], None], what: str, every_s: float) -> Iterator[None]:
    """Call `stamp` (a database write) now and every `every_s` from a thread of its own until the
    block ends: a job's heartbeat (job_heartbeat), a baseline's clock (baselines.services.execute)."""
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
