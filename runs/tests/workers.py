"""Start and stop a real Celery worker process for tests.

The worker listens on a queue of its own, so a benchlab started by `make run` on the same
Redis never takes the tests' tasks (nor the other way round), and it connects to the test
database through DATABASE_URL.
"""

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import redis
from django.conf import settings

from benchlab.celery import app as celery_app

BASE_DIR = Path(settings.BASE_DIR)


def database_url_for_tests() -> str:
    db = settings.DATABASES["default"]
    password = f":{quote(str(db['PASSWORD']), safe='')}" if db.get("PASSWORD") else ""
    return f"postgres://{quote(str(db['USER']), safe='')}{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@dataclass
class CeleryWorker:
    process: subprocess.Popen[bytes]
    queue: str
    nodename: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def pool_pids(self) -> list[int]:
        """The worker's pool processes (prefork): its children."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        return [int(pid) for pid in children]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        children = [(pid, _started_at(pid)) for pid in self.pool_pids()] if self.process.poll() is None else []
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        # A prefork pool process outlives a parent that was killed, holding its database
        # connection: the test database could not be dropped at the end of the session.
        for pid, started in children:
            _stop_orphan(pid, started)
        self.log_path.unlink(missing_ok=True)
        # The queue and its binding (and any task still waiting to be retried) go with it.
        broker = redis.Redis.from_url(settings.REDIS_URL)
        broker.delete(self.queue, f"_kombu.binding.{self.queue}")
        broker.close()


def _started_at(pid: int) -> str | None:
    """The process's start time (in clock ticks since boot): with the PID, which process it is."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _stop_orphan(pid: int, started: str | None, grace_s: float = 10.0) -> None:
    """Wait for a pool process of a stopped worker to exit; SIGKILL it if it does not (the
    same process: its PID with its start time, never a newer one that took the PID over)."""
    deadline = time.monotonic() + grace_s
    while started is not None and _started_at(pid) == started and time.monotonic() < deadline:
        time.sleep(0.1)
    if started is not None and _started_at(pid) == started:
        os.kill(pid, signal.SIGKILL)


def start_celery_worker(
    ready_timeout: float = 60.0,
    pool: str = "prefork",
    concurrency: int = 4,
    env: dict[str, str] | None = None,
    queue: str | None = None,
) -> CeleryWorker:
    """A worker on a queue of its own, or on `queue` (one that replaces a worker that died)."""
    tag = uuid.uuid4().hex[:10]
    queue, nodename = queue or f"test-{tag}", f"test-{tag}@localhost"
    log_path = Path(f"/tmp/benchlab-test-worker-{tag}.log")
    # Its own queue also for the tasks it sends itself (the dispatcher in a worker starts runs).
    env = (
        os.environ
        | {
            "DATABASE_URL": database_url_for_tests(),
            "REDIS_URL": settings.REDIS_URL,
            "BENCHLAB_QUEUE": queue,
        }
        | (env or {})
    )
    command = [
        sys.executable, "-m", "celery", "-A", "benchlab", "worker",
        "--queues", queue, "--hostname", nodename, "--pool", pool, "--concurrency", str(concurrency),
        "--without-mingle", "--without-gossip", "--loglevel", "INFO",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    worker = CeleryWorker(process=process, queue=queue, nodename=nodename, log_path=log_path)
    deadline = time.monotonic() + ready_timeout
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"celery worker exited with {process.returncode}:\n{worker.log()}")
            if celery_app.control.ping(destination=[nodename], timeout=0.5):
                return worker
        raise RuntimeError(f"celery worker did not answer a ping within {ready_timeout} s")
    except BaseException:
        worker.stop()  # also when the ping itself failed (Redis unreachable)
        raise


@contextmanager
def tasks_sent_to(worker: CeleryWorker) -> Iterator[CeleryWorker]:
    """Tasks this test process sends go to the worker's queue only, until the block ends (and
    the worker is stopped then)."""
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = worker.queue
    try:
        yield worker
    finally:
        celery_app.conf.task_default_queue = previous_queue
        worker.stop()


@contextmanager
def own_worker(settings: Any, concurrency: int = 1, **overrides: float) -> Iterator[CeleryWorker]:
    """A prefork worker of the test's own, on its own queue, with these settings (seconds)
    overridden alike in this process (pytest-django's `settings`) and in the worker (its
    environment, which benchlab's settings read)."""
    for name, value in overrides.items():
        setattr(settings, name, value)
    with tasks_sent_to(start_celery_worker(concurrency=concurrency, env=worker_env(overrides))) as worker:
        yield worker


def worker_env(overrides: dict[str, float]) -> dict[str, str]:
    """Settings in seconds as a worker's environment gives them to benchlab's settings."""
    return {name: f"{value:g}" for name, value in overrides.items()}
