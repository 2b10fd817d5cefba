"""A cancel noticed within a second, whatever the run's worker is busy with.

The thread driving a run waits for minutes at a time: on mkfs, on `pgbench -i` loading a large
scale, on pgbench measuring. A cancel asked for meanwhile must not wait for that to end: this
watcher reads the run's cancel flag twice a second from a thread of its own and, the first time
it is set (or the run was ended from outside, e.g. cancelled while still queued), calls the
worker's `on_cancel`, which stops what runs on the host now (jobs.observer.JobObserver.cancel_now).
PostgreSQL builds and fio baselines are watched the same way, each by its own flag.
"""

import logging
from collections.abc import Callable

from django.db import DatabaseError, connection, models

from runs.jobs.background import BackgroundWatch
from runs.jobs.kinds import kind_of
from runs.jobs.observer import cancel_requested

log = logging.getLogger(__name__)
POLL_EVERY_S = 0.5


class CancelWatch(BackgroundWatch):
    """A context manager: watches the job's cancel flag while the block runs."""

    def __init__(self, job: models.Model, on_cancel: Callable[[], None], every_s: float = POLL_EVERY_S) -> None:
        """Watches `job` (a run, a build, a baseline: jobs.observer.cancel_requested)."""
        self.kind, self.job_id, self.on_cancel, self.every_s = kind_of(job), job.pk, on_cancel, every_s
        self.what = f"{self.kind.name} {self.job_id}"
        super().__init__(name=f"{self.kind.name}-{job.pk}-cancel-watch")

    def _watch(self) -> None:
        try:
            while not self._stop.wait(self.every_s):
                if self._requested():
                    self.on_cancel()
                    return
        except Exception:  # a failed stop is the run's worker's to report; the watch just ends
            log.exception("%s: acting on its cancel failed", self.what)
        finally:
            connection.close()  # this thread's own connection

    def _requested(self) -> bool:
        try:
            return cancel_requested(self.kind, self.job_id)
        except DatabaseError:  # benchlab's database away for a moment: look again next time
            log.warning("%s: could not read its cancel flag (benchlab's database unreachable)", self.what)
            connection.close()
            return False
