"""What the browser tests share: Debian's chromium under Playwright, logging in, waiting for a
page's JavaScript, and uvicorn serving the test database (conftest's web_server and
page_server fixtures). Screenshots go to test-artifacts/."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, Response, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from runs.lab.transport.waiting import wait_until as wait_until_true
from runs.tests.web_server import uvicorn

ROOT = Path(settings.BASE_DIR)
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
PASSWORD = "a-long-browser-password"


@contextmanager
def serving(queue: str, **environment: str) -> Iterator[str]:
    """uvicorn (scripts/web) on the test database, sending tasks to `queue`, with `environment`
    added to its own; its address."""
    with uvicorn(BENCHLAB_QUEUE=queue, **environment) as server:
        yield server.address


@contextmanager
def chromium(height: int) -> Iterator[tuple[BrowserContext, list[str]]]:
    """Debian's chromium under Playwright, and what the Content-Security-Policy blocked on any of
    its pages (Chromium reports that on the console). Playwright's sync API runs an event loop
    in this thread: no ORM calls inside the block."""
    violations: list[str] = []
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
            )
            context = browser.new_context(viewport={"width": 1280, "height": height})
            context.on("console", lambda message: _keep_violation(message.text, violations))
            try:
                yield context, violations
            finally:
                browser.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


def _keep_violation(text: str, violations: list[str]) -> None:
    if "Content Security Policy" in text:
        violations.append(text)


def wait_until(page: Page, expression: str, timeout_ms: int) -> None:
    """Poll a JavaScript expression until it is true. (Playwright's wait_for_function compiles
    its predicate with eval, which the pages' Content-Security-Policy rightly refuses.)"""
    if not wait_until_true(lambda: _true_now(page, expression), timeout_ms / 1000, 0.2):
        raise AssertionError(f"not true within {timeout_ms} ms: {expression}")


def _true_now(page: Page, expression: str) -> bool:
    """The expression's value; not yet while the page is navigating (a job's page reloads itself
    when the job ends, and an evaluate caught in between has no page to run in)."""
    try:
        return bool(page.evaluate(expression))
    except PlaywrightError as error:
        if "Execution context was destroyed" in error.message:
            return False
        raise


def log_in(page: Page, server: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{server}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def watch_errors(page: Page, errors: list[str]) -> None:
    """Console errors (a blocked script, an exception), uncaught exceptions, and requests that
    failed. The console's own "failed to load resource" lines are left to the last, which name
    the request: Chromium's own requests (a /favicon.ico it asks for unprompted) say only "404"."""

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(f"{page.url}: {message.text}")

    def on_response(response: Response) -> None:
        if response.status >= 400:
            errors.append(f"{page.url}: {response.status} from {response.url}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
    page.on("response", on_response)


@contextmanager
def signed_in(server: str, username: str, path: str, height: int) -> Iterator[tuple[Page, list[str], list[str]]]:
    """chromium with `username` signed in on `server` and `path` open: the page, what the
    Content-Security-Policy blocked (see chromium) and the page's errors (see watch_errors).
    Screenshots may go to ARTIFACTS at once. No ORM calls inside the block."""
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    with chromium(height) as (context, violations):
        page = context.new_page()
        watch_errors(page, errors)
        log_in(page, server, username)
        page.goto(f"{server}{path}")
        yield page, violations, errors
