"""A cancel noticed within a second, whatever the run's worker is busy with.

The thread driving a run waits for minutes at a time: on mkfs, on `pgbench -i` loading a large
scale, on pgbench measuring. A cancel asked for meanwhile must not wait for that to end: this
watcher reads the run's cancel flag twice a second from a thread of its own and, the first time
it is set (or the run was ended from outside, e.g. cancelled while still queued), calls the
worker's `on_cancel`, which stops what runs on the host now (execute.RunObserver.cancel_now).
A PostgreSQL build is watched the same way, with its own flag (services.build_execute).
"""

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from django.db import DatabaseError, connection

from runs.models import FINAL_STATES, Run

log = logging.getLogger(__name__)
POLL_EVERY_S = 0.5


def cancel_requested(run_id: int) -> bool:
    """Has somebody asked the run to stop (or ended it while its worker was starting it)?"""
    requested, state = Run.objects.values_list("cancel_requested", "state").get(pk=run_id)
    return requested or state in FINAL_STATES


class CancelWatch:
    """A context manager: watches the run's cancel flag while the block runs."""

    def __init__(
        self,
        run_id: int,
        on_cancel: Callable[[], None],
        every_s: float = POLL_EVERY_S,
        *,
        requested: Callable[[], bool] | None = None,
        what: str = "run",
    ) -> None:
        """Watches run `run_id`'s flag; or, given `requested` (another job's flag, e.g. a
        build's), that, naming the job `what` in the log and the thread's name."""
        self.run_id, self.on_cancel, self.every_s, self.what = run_id, on_cancel, every_s, what
        self.requested = requested or (lambda: cancel_requested(run_id))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"{what}-{run_id}-cancel-watch", daemon=True)

    def __enter__(self) -> "CancelWatch":
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        try:
            while not self._stop.wait(self.every_s):
                if self._requested():
                    self.on_cancel()
                    return
        except Exception:  # a failed stop is the run's worker's to report; the watch just ends
            log.exception("%s %s: acting on its cancel failed", self.what, self.run_id)
        finally:
            connection.close()  # this thread's own connection

    def _requested(self) -> bool:
        try:
            return self.requested()
        except DatabaseError:  # benchlab's database away for a moment: look again next time
            log.warning(
                "%s %s: could not read its cancel flag (benchlab's database unreachable)", self.what, self.run_id
            )
            connection.close()
            return False
