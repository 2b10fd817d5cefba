"""A watcher that works on a thread of its own while a `with` block runs: the cancel watch
(jobs.cancel_watch) and the benchmarks' CPU sampler (benchmarks/process_cpu.py) are ones.

Django-free, so a script may use it without settings."""

import threading
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class BackgroundWatch(ABC):
    """A context manager: `_watch` runs on a daemon thread from entering the block to leaving it.

    `_watch` is to return once `_stop` is set, which leaving the block does before it waits for
    the thread."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    @abstractmethod
    def _watch(self) -> None:
        """The work, on the thread: return once `self._stop` is set."""
