"""Shared fixtures.

Tests that need other processes to see their rows use transaction=True; pytest-django then
empties the tables afterwards, which would also delete the role groups made by the data
migration, so such tests also ask for serialized_rollback=True (the rows are restored).
"""

import asyncio
import functools
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg.errors
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, connections
from django.db.backends.postgresql.operations import DatabaseOperations
from django.test import Client
from hypothesis import settings as hypothesis_settings

from benchlab.redis_keys import redis_prefix
from runs.builds.services import sources as build_sources
from runs.common.roles import ADMIN, OPERATOR, VIEWER
from runs.jobs import live
from runs.lab.host.run_user import RUN_USER, ensure_run_user
from runs.lab.transport.local import LocalTransport
from runs.lab.transport.ssh import SSHTransport
from runs.tests.browser import serving
from runs.tests.factories import make_user
from runs.tests.fake_sources import FakeHostSources
from runs.tests.virtual_lab import VirtualLab, start_lab, stop_lab
from runs.tests.workers import CeleryWorker, start_celery_worker, tasks_sent_to

# What a test starts, told by the calls in its own code and in every fixture it uses: the
# markers `make test-fast` leaves out (-m "not lab and not worker and not browser"). Found from
# the code, so that a new test is sorted without anyone remembering to mark it.
NEEDS = {
    "lab": ("virtual_lab", "start_lab("),
    "worker": ("celery_worker", "start_celery_worker(", "own_worker(", '"scripts/serve"'),
    "browser": ("chromium(", "serving(", "uvicorn(", '"scripts/serve"'),
}


def _code_of(item: pytest.Item) -> str:
    functions = [getattr(item, "function", None)]
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    functions += [definition.func for definitions_ in definitions.values() for definition in definitions_]
    return "\n".join(_source_of(function) for function in functions if function is not None)


@functools.cache
def _source_of(function: Any) -> str:
    """Read once per function: every test shares the autouse fixtures, and reading a function's
    source tokenizes its file (once per test, that was most of collecting the suite)."""
    return inspect.getsource(function)


# What uses the virtual lab, a Celery worker or benchlab's OS user runs in one of two lines, each
# on a pytest-xdist worker of its own, one test after another (--dist loadgroup), with the virtual
# lab and the Celery worker of that worker's session; the rest runs beside them (make test runs a
# worker more than the cores: the lines mostly wait on their labs).
# - THIS_MACHINE: whatever acts on this machine itself: work in the OS user's directories here,
#   runs on this machine (a run's start stops every process of the user in this machine's PID
#   namespace), and the rest of the lab tests.
# - SECOND_LAB: jobs, builds and campaigns, whose runs are on their own virtual lab only: its
#   hosts' processes live in PID namespaces of their own, and the lab hosts share this machine's
#   /etc only through ensure_run_user, which retries when two create the user at once. The
#   builds of test_build_lab and test_page_size_lab share /var/cache/benchlab/test-builds: both
#   are in this line.
RUN_USER_CALLS = ("ensure_run_user(", "run_user_dir")
ON_THIS_MACHINE = (*RUN_USER_CALLS, "LocalTransport(", "is_local", "register_local_host")
ONE_AT_A_TIME = ("lab", "worker")
SECOND_LAB_PACKAGES = ("runs/tests/jobs/", "runs/tests/builds/", "runs/tests/campaigns/")

THIS_MACHINE = "this-machine"
SECOND_LAB = "second-lab"
LINES = (THIS_MACHINE, SECOND_LAB)


def _line_of(item: pytest.Item, code: str) -> str:
    second = item.nodeid.startswith(SECOND_LAB_PACKAGES) and not any(call in code for call in ON_THIS_MACHINE)
    return SECOND_LAB if second else THIS_MACHINE


# First: pytest-xdist's own hook reads the xdist_group markers in this same hook (it suffixes
# each node id with its group); run after it, the markers added here would not be seen.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        code = _code_of(item)
        for marker, calls in NEEDS.items():
            if not item.get_closest_marker(marker) and any(call in code for call in calls):
                item.add_marker(marker)
        if not config.pluginmanager.hasplugin("xdist"):
            continue
        # Markers, not keywords: a test's keywords hold its packages' names, and every test in
        # runs/tests/lab/ (parsers, option checks: a thousand pure tests) waited in the one line.
        if any(item.get_closest_marker(marker) for marker in ONE_AT_A_TIME) or any(c in code for c in RUN_USER_CALLS):
            item.add_marker(pytest.mark.xdist_group(_line_of(item, code)))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Stops a worker whose grouping did not take: its tests would race on the OS user and each
    worker start a virtual lab of its own. pytest-xdist groups by suffixing node ids, which
    pytest 9.2 no longer lets it do (pyproject.toml pins below it)."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    ungrouped = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("xdist_group") and not item.nodeid.endswith(tuple(f"@{line}" for line in LINES))
    ]
    if ungrouped:
        message = f"--dist loadgroup did not group {len(ungrouped)} tests, e.g. {ungrouped[0]}"
        print(message, file=sys.__stderr__)  # a worker's exception reaches the terminal as a traceback only
        raise pytest.UsageError(message)


# How many examples each property draws: `make test` the full number, `make test-fast`
# (HYPOTHESIS_PROFILE=fast) a tenth, for a quick answer. A property that wants more than the
# default asks for a multiple of it (settings().max_examples), so it scales with the tier.
hypothesis_settings.register_profile("full", max_examples=150, deadline=None)
hypothesis_settings.register_profile("fast", parent=hypothesis_settings.get_profile("full"), max_examples=15)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "full"))


# The cast: every role, plus a user who has an account but no role at all.
ROLE_OF = {"vera": VIEWER, "otto": OPERATOR, "ada": ADMIN, "nora": None}


def _test_database_name() -> str:
    # Named from the test database's name, never from whatever NAME is set when this runs:
    # a real benchlab's keys (benchlab:<its database>:...) must survive. Under pytest-xdist each
    # worker has a database of its own, suffixed with its id as pytest-django names it.
    database: dict[str, Any] = settings.DATABASES["default"]
    name = (database.get("TEST") or {}).get("NAME") or f"test_{str(database['NAME']).removeprefix('test_')}"
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"{name}_{worker}" if worker else name


# This machine's run disk (register_local_host) in a directory of the session's own, for this
# process and the scripts it starts; removed when the session ends.
LOCAL_DEVICE_DIR = Path(f"/var/tmp/benchlab-test-{os.getpid()}-this-machine")
settings.LOCAL_DEVICE_DIR = LOCAL_DEVICE_DIR
os.environ["BENCHLAB_LOCAL_DEVICE_DIR"] = str(LOCAL_DEVICE_DIR)
# Builds from a release tarball take it from a directory of the tests' (root's, on this machine,
# which the virtual lab's hosts share): test_pg_build_lab links the cached tarballs there.
TEST_TARBALL_DIR = "/var/cache/benchlab/test-pg-tarballs"
settings.PG_TARBALL_DIR = TEST_TARBALL_DIR
os.environ["BENCHLAB_PG_TARBALL_DIR"] = TEST_TARBALL_DIR

# The cache (API throttle counters) under the test database's prefix, set before any cache is
# made: a test's requests never count against a real benchlab's users sharing this Redis.
# Logging in checks a password: at benchlab's own cost (a million PBKDF2 rounds) the tests that log
# in again and again spend most of their time hashing.
settings.PASSWORD_HASHERS = ["runs.tests.factories.FastPBKDF2PasswordHasher", *settings.PASSWORD_HASHERS]

settings.CACHES["default"]["KEY_PREFIX"] = f"{redis_prefix(_test_database_name())}:cache"


_execute_sql_flush = DatabaseOperations.execute_sql_flush


def _flush_retried_after_a_deadlock(self: DatabaseOperations, sql_list: list[str]) -> None:
    """A transactional test ends by truncating every table. The session's Celery worker may still
    be reading some of them (a heartbeat, the dispatcher), and PostgreSQL once chose the
    TRUNCATE as a deadlock's victim (CI, 25 Nov 2026): the next test then found the last one's
    rows. The flush is one transaction, rolled back whole, so it is tried again."""
    for attempt in range(1, 6):
        try:
            return _execute_sql_flush(self, sql_list)
        except OperationalError as error:
            if attempt == 5 or not isinstance(error.__cause__, psycopg.errors.DeadlockDetected):
                raise
            time.sleep(0.2 * attempt)


DatabaseOperations.execute_sql_flush = _flush_retried_after_a_deadlock  # type: ignore[method-assign, assignment]

# WhiteNoise reads every static file's headers when its middleware starts, about 80 ms, and the
# test client starts the middleware afresh for each Client: with refresh on it looks a file up
# when it is asked for instead (the same files, from the same var/static).
settings.WHITENOISE_AUTOREFRESH = True


def _delete_keys(pattern: str) -> None:
    keys = list(live.client().scan_iter(match=pattern, count=1000))
    if keys:
        live.client().delete(*keys)


DENY_FILES = [Path("/etc/cron.deny"), Path("/etc/at.deny")]


@pytest.fixture(scope="session", autouse=True)
def local_device_dir_is_removed() -> Iterator[None]:
    yield
    shutil.rmtree(LOCAL_DEVICE_DIR, ignore_errors=True)


@dataclass(frozen=True)
class RunUserBefore:
    existed: bool
    deny_files: dict[Path, str | None]  # each file's text, None where it did not exist


RUN_USER_BEFORE = pytest.StashKey[RunUserBefore]()


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Runs (and the probe) create benchlab's unprivileged OS user on the machine (the virtual
    lab's hosts share its /etc) and keep it out of cron and at. What was there is noted by the
    one process that outlives the others (pytest-xdist's controller, or pytest itself)."""
    if _is_xdist_worker(session.config):
        return
    existed = subprocess.run(["id", "-u", RUN_USER], capture_output=True).returncode == 0
    deny_files = {path: path.read_text() if path.exists() else None for path in DENY_FILES}
    session.config.stash[RUN_USER_BEFORE] = RunUserBefore(existed, deny_files)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A session that made the user removes it and restores those files, once every worker has
    ended. userdel fails while any process of the user is left, which would be a test's leak."""
    before = session.config.stash.get(RUN_USER_BEFORE, None)
    if before is None or before.existed:
        return
    if subprocess.run(["id", "-u", RUN_USER], capture_output=True).returncode == 0:
        removed = subprocess.run(["userdel", RUN_USER], capture_output=True, text=True)
        if removed.returncode != 0:
            print(f"\nA test left a process of {RUN_USER}: userdel {RUN_USER}: {removed.stderr}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    for path, text in before.deny_files.items():
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)


@pytest.fixture(autouse=True)
def fake_sources(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> FakeHostSources | None:
    """Outside the lab, hosts are not asked which PostgreSQL sources they have (a test's hosts
    are rows, their addresses nobody's): they have FakeHostSources' (the test may change them)."""
    if request.node.get_closest_marker("lab"):
        return None
    fake = FakeHostSources()
    monkeypatch.setattr(build_sources, "host_sources_read", fake)
    return fake


@pytest.fixture
def run_user_dir() -> Iterator[Path]:
    """A directory of benchlab's unprivileged user on this machine (as a run's work dir is)."""
    ensure_run_user(LocalTransport())
    directory = Path(tempfile.mkdtemp(prefix="benchlab-test-", dir="/var/tmp"))
    try:
        shutil.chown(directory, RUN_USER, RUN_USER)
        yield directory
    finally:
        shutil.rmtree(directory)


def make_cast() -> dict[str, User]:
    return {name: make_user(name, role) for name, role in ROLE_OF.items()}


@pytest.fixture
def users(db: None) -> dict[str, User]:
    return make_cast()


@pytest.fixture
def client_for(users: dict[str, User]) -> "ClientFactory":
    return ClientFactory(users)


class ClientFactory:
    def __init__(self, users: dict[str, User]) -> None:
        self.users = users

    def __call__(self, name: str | None) -> Client:
        """A test client logged in as `name`, or anonymous for None."""
        client = Client()
        if name is not None:
            client.force_login(self.users[name])
        return client


@pytest.fixture(scope="session")
def celery_worker(django_db_setup: None, django_db_blocker: object) -> Iterator[CeleryWorker]:
    """A real `celery worker` process on its own queue, connected to the test database."""
    with tasks_sent_to(start_celery_worker()) as worker:
        yield worker


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's test database, with one more thing done before it is dropped. Async views
    reach the database from asgiref's one thread for sync code; a server closes that thread's
    connection after each request, the test client never does. Left open, it made dropping the
    test database wait 5 s for it, then fail (a warning, and a database left behind)."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


@pytest.fixture(scope="session", autouse=True)
def redis_keys_are_removed() -> Iterator[None]:
    """The test database's event streams and cache keys (throttle counters) neither come from an
    earlier session (ids restart with the test database) nor outlive this one."""
    pattern = f"{redis_prefix(_test_database_name())}:*"
    _delete_keys(pattern)
    yield
    _delete_keys(pattern)


@pytest.fixture(scope="session")
def virtual_lab() -> Iterator[VirtualLab]:
    """Three SSH hosts with an SSD, an HDD and a RAM disk each (scripts/lab), for the whole session."""
    lab = start_lab()
    try:
        yield lab
    finally:
        left = stop_lab(lab)
        assert not left, f"the virtual lab left things behind: {left}"


@pytest.fixture
def lab1(virtual_lab: VirtualLab) -> Iterator[SSHTransport]:
    """A root connection to the virtual lab's lab1, closed after the test."""
    with closing(virtual_lab.connect("lab1")) as transport:
        yield transport


@pytest.fixture
def lab2(virtual_lab: VirtualLab) -> Iterator[SSHTransport]:
    """A root connection to the virtual lab's lab2, closed after the test."""
    with closing(virtual_lab.connect("lab2")) as transport:
        yield transport


@pytest.fixture
def web_server(celery_worker: CeleryWorker) -> Iterator[str]:
    """uvicorn on the test database, sending tasks to the test worker's queue; its address."""
    with serving(celery_worker.queue) as address:
        yield address


@pytest.fixture
def page_server() -> Iterator[str]:
    """uvicorn on the test database for pages that queue nothing: its tasks would go to a queue
    nobody reads. Its address."""
    with serving(f"benchlab-test-unread-{uuid.uuid4().hex[:8]}") as address:
        yield address
