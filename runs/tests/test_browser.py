"""End to end in a real browser: Debian's chromium driven by Playwright, against uvicorn and a
real Celery worker, running on the virtual lab. Screenshots go to test-artifacts/."""

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from playwright.sync_api import sync_playwright

from runs.management.commands.lab_register import lab_host_name
from runs.tests.factories import make_user
from runs.tests.virtual_lab import VirtualLab
from runs.tests.workers import CeleryWorker, database_url_for_tests

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
ROOT = Path(settings.BASE_DIR)
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
PASSWORD = "a-long-browser-password"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def web_server(celery_worker: CeleryWorker) -> Iterator[str]:
    """uvicorn on the test database, sending tasks to the test worker's queue."""
    port = free_port()
    env = os.environ | {
        "DATABASE_URL": database_url_for_tests(),
        "BENCHLAB_BIND": f"127.0.0.1:{port}",
        "BENCHLAB_QUEUE": celery_worker.queue,
    }
    process = subprocess.Popen(["scripts/web"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_an_operator_queues_a_run_watches_it_live_and_sees_the_results(
    virtual_lab: VirtualLab, web_server: str
) -> None:
    call_command("lab_register", "--id", str(virtual_lab.lab_id), stdout=StringIO())
    make_user("otto", "operator", password=PASSWORD)
    lab1 = lab_host_name(virtual_lab.lab_id, "lab1")
    ARTIFACTS.mkdir(exist_ok=True)
    # Playwright's sync API runs an event loop in this thread: no ORM calls below this line.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
            )
            context = browser.new_context(viewport={"width": 1280, "height": 1100})
            page = context.new_page()
            page.goto(f"{web_server}/accounts/login/")
            page.fill("#id_username", "otto")
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            page.goto(f"{web_server}/runs/new/")
            page.select_option("#id_server_host", label=lab1)
            page.select_option("#id_device", label=f"{lab1}:ram")
            page.select_option("#id_pg_install", label=f"PostgreSQL 15.20 (8 kB pages) on {lab1}")
            page.fill("#id_mount_options", "noatime")
            page.fill("#id_scale", "1")
            page.fill("#id_clients", "2")
            page.fill("#id_threads", "1")
            page.fill("#id_duration_s", "8")
            page.fill("#id_warmup_s", "2")
            page.click("form.run-form button[type=submit]")
            page.wait_for_load_state()
            assert "/runs/new/" not in page.url, page.locator(".error").all_text_contents()
            run_id = page.url.rstrip("/").rsplit("/", 1)[-1]
            # The run list, open in another tab, follows the run's state without reloading.
            listing = context.new_page()  # the same session
            listing.goto(f"{web_server}/runs/")
            listing.evaluate("window.notReloaded = true")
            listing_state = f"document.querySelector('td.state[data-run=\"{run_id}\"]').textContent.trim()"

            # The chart gains points while the run runs.
            page.wait_for_function("window.benchlabCharts.tps.data.datasets[0].data.length >= 3", timeout=120_000)
            live_points = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.length")
            live_state = page.text_content("#run-state")
            page.screenshot(path=str(ARTIFACTS / "run-live.png"), full_page=True)

            page.wait_for_selector("section.results", timeout=180_000)
            page.screenshot(path=str(ARTIFACTS / "run-results.png"), full_page=True)
            results = page.text_content("section.results") or ""
            final_points = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.length")
            listing.wait_for_function(f"{listing_state} === 'done'", timeout=30_000)
            listing_live = listing.evaluate("window.notReloaded === true")
            browser.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]

    assert live_state in ("warming up", "measuring", "collecting")
    assert 3 <= live_points <= final_points
    assert final_points >= 8
    assert "steady-state tps" in results and "noatime" in results
    assert "p95" in results and "warm-up excluded" in results
    assert listing_live, "the run list reloaded instead of updating the row"
    assert (ARTIFACTS / "run-live.png").stat().st_size > 10_000
