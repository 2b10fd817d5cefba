"""`make run`'s last step, for real: scripts/serve starts the ASGI server and a Celery worker,
serves pages, and Ctrl-C stops every process it started."""

import http.cookiejar
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from runs.tests.factories import make_user
from runs.tests.web_server import free_port
from runs.tests.workers import database_url_for_tests

ROOT = Path(settings.BASE_DIR)


def group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    port = free_port()
    log = tmp_path / "serve.log"
    tag = uuid.uuid4().hex[:10]
    env = os.environ | {
        "DATABASE_URL": database_url_for_tests(),
        "BENCHLAB_BIND": f"127.0.0.1:{port}",
        "BENCHLAB_WORKER_CONCURRENCY": "1",
        # Its own queue and name: it must never take a task of a benchlab on the same Redis,
        # and the health check must be seen answering for this worker, not another.
        "BENCHLAB_QUEUE": f"test-serve-{tag}",
        "BENCHLAB_WORKER_NAME": f"serve-{tag}",
    }
    with log.open("w") as out:
        # Its own session: the test can signal the whole group as a terminal's Ctrl-C would.
        process = subprocess.Popen(["scripts/serve"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "benchlab is running at" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield process, f"http://127.0.0.1:{port}", f"serve-{tag}@"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def log_in(base: str, username: str, password: str) -> urllib.request.OpenerDirector:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = opener.open(f"{base}/accounts/login/").read().decode()
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert match
    body = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": match[1]})
    opener.open(urllib.request.Request(f"{base}/accounts/login/", data=body.encode(), headers={"Referer": base}))
    return opener


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_serve_answers_pages_through_uvicorn_with_a_live_worker_and_stops_on_ctrl_c(
    served: tuple[subprocess.Popen[str], str, str],
) -> None:
    process, base, worker_name = served
    make_user("vera", "viewer", password="a-long-test-password")

    opener = log_in(base, "vera", "a-long-test-password")
    home = opener.open(f"{base}/").read().decode()
    deadline = time.monotonic() + 60  # the worker may still be starting: 503 until it answers
    while True:
        try:
            health = json.loads(opener.open(f"{base}/health.json").read())
            if worker_name in json.dumps(health):
                break
        except urllib.error.HTTPError as error:
            health = json.loads(error.read())
        assert time.monotonic() < deadline, f"serve's own worker never answered the health check: {health}"
        time.sleep(0.5)

    assert "Lab inventory" in home
    assert health["ok"] is True, health

    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(timeout=60) == 0
    deadline = time.monotonic() + 30
    while not group_is_gone(process.pid):
        assert time.monotonic() < deadline, "a process started by scripts/serve outlived Ctrl-C"
        time.sleep(0.2)
