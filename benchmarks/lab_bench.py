"""What the benchmarks that run real runs share: a virtual lab of their own, registered in the
(throw-away) inventory; a real Celery worker on a queue of its own; waiting for a run to end.

Import after django.setup() (the benchmarks' modules do that first).
"""

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from io import StringIO

from django.contrib.auth.models import User
from django.core.management import call_command

from runs.lab.transport.waiting import wait_until
from runs.management.commands.lab_register import lab_host_name
from runs.models import FINAL_STATES, Host, Run
from runs.tests.virtual_lab import VirtualLab, start_lab, stop_lab
from runs.tests.workers import CeleryWorker, start_celery_worker, tasks_sent_to


@contextmanager
def own_virtual_lab() -> Iterator[VirtualLab]:
    """A virtual lab with a number of its own (other labs may be up on this machine), taken
    down at the end; whatever it left behind is said on stderr."""
    lab = start_lab()
    try:
        yield lab
    finally:
        left = stop_lab(lab)
        if left:
            print(f"the virtual lab left things behind: {left}", file=sys.stderr)


def registered_hosts(lab: VirtualLab, names: Sequence[str]) -> list[Host]:
    """The lab's hosts in the inventory (registered and probed), in the order of `names`."""
    call_command("lab_register", "--id", str(lab.lab_id), stdout=StringIO())
    return [Host.objects.get(name=lab_host_name(lab.lab_id, name)) for name in names]


def bench_user() -> User:
    return User.objects.create_superuser("bench", password=None)


@contextmanager
def lab_worker(concurrency: int) -> Iterator[CeleryWorker]:
    """A real Celery worker (prefork, as `scripts/worker` runs one) that gets every task this
    process sends until the block ends; stopped then."""
    with tasks_sent_to(start_celery_worker(concurrency=concurrency)) as worker:
        yield worker


def wait_until_finished(run: Run, timeout_s: float, poll_s: float = 1.0) -> Run:
    """The run once it has ended (done, failed or cancelled), read again from the database.
    Meanwhile only its state is read: a benchmark that watches the run must not load this
    machine more than it has to."""
    state = Run.objects.filter(pk=run.pk).values_list("state", flat=True)
    if not wait_until(lambda: state.get() in FINAL_STATES, timeout_s, poll_s):
        raise TimeoutError(f"run {run.pk} still {state.get()} after {timeout_s:g} s")
    run.refresh_from_db()
    return run
