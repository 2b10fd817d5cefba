"""The build pages in a real browser (Debian's chromium under Playwright, against uvicorn): the
form with the sources the virtual lab's lab1 has (version and checksum) and its error summary, the
form for a host that cannot be asked, a build page that follows the build live (its steps with
their start and end, make's progress bar with the time left, the log) and turns into the finished
page, a failed build's page, and a cancel that asks first. The build's live events are published
by the test itself: no worker builds anything. Screenshots go to test-artifacts/."""

import dataclasses
import re
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from runs.builds.services.builds import build_fields
from runs.jobs import live
from runs.jobs.kinds import BUILD
from runs.lab.pgbuild.options import BuildOptions, BuildSource, SourceKind, build_key, build_prefix
from runs.models import BuildState, Host, PgBuild, PgInstall
from runs.tests.bench.test_browser_run_page import in_another_thread, text
from runs.tests.bench.test_run_execution import lab_inventory
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in, signed_in, wait_until
from runs.tests.builds.test_pg_build_lab import cached_sources, newest_cached_tarball, tarball_source, version_order
from runs.tests.factories import make_host, make_user
from runs.tests.web.test_accessibility import axe_context, axe_report, serious

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)
__all__ = ["lab_inventory"]  # a fixture, used by name
LOG_LINES = "document.getElementById('log').textContent.trimEnd().split('\\n').length"
STEP_TIMES = "items => items.map((i) => i.querySelector('.step-times')?.textContent ?? '')"
LOG_AT_BOTTOM = (
    "(() => { const l = document.getElementById('log'); return l.scrollHeight - l.scrollTop - l.clientHeight <= 4; })()"
)


def options_4k() -> BuildOptions:
    source = BuildSource(SourceKind.DEBIAN, package="postgresql-15", package_version="15.20-0+deb12u1")
    return BuildOptions(version="15.20", source=source, block_size_kb=4)


def make_build(host: Host, options: BuildOptions | None = None, **fields: Any) -> PgBuild:
    options = options or options_4k()
    return PgBuild.objects.create(
        host=host, key=build_key(options), prefix=build_prefix(options), **(build_fields(options) | fields)
    )


def progress_said(page: Page) -> str:
    """What the progress bar's label and text say (the bar's own fallback text aside)."""
    return f"{text(page, '#build-progress-label')} {text(page, '#build-progress-text')}"


def publish(build: PgBuild, kind: str, data: dict[str, Any]) -> None:
    live.publish_job(BUILD, build.pk, kind, data)


def publish_state(build: PgBuild, state: BuildState, at: datetime) -> None:
    publish(build, "state", {"state": state.value, "label": state.label, "at": at.isoformat()})


def publish_step(build: PgBuild, step: str, label: str, at: datetime) -> None:
    publish(build, "step", {"step": step, "label": label, "at": at.isoformat()})


@BROWSER
def test_the_form_says_at_once_when_a_host_cannot_be_asked_for_its_sources_and_offers_no_build(
    page_server: str, tmp_path: Path
) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    # No machine has this address (the virtual lab's network, or none at all): the connection
    # gets no answer, as with a host that is switched off.
    host = make_host(name="lab9", address="10.200.0.199", private_key_path=str(key))
    make_host(name="lab8", address="10.200.0.198", private_key_path=str(key))
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/builds/new/", height=1000) as (page, violations, errors):
        before = text(page, "#sources-none-asked")
        began = time.monotonic()
        with page.expect_navigation():
            page.select_option("#host-choice", str(host.pk))  # the script reloads the form for that host
        took = time.monotonic() - began
        url = page.url
        said = text(page, "#sources-problem")
        disabled = page.eval_on_selector("#queue-build", "b => b.disabled")
        page.screenshot(path=str(ARTIFACTS / "build-form-host-unreachable.png"), full_page=True)

    assert before.startswith("Choose a host above: the sources it has are listed here.")
    assert url.endswith(f"/builds/new/?host={host.pk}") and took < 10, took
    assert said.startswith("Could not ask lab9 which PostgreSQL sources it has: ") and said.endswith(
        "Nothing can be built there until it answers."
    )
    assert disabled
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_a_build_page_follows_the_steps_the_make_progress_and_the_log_then_shows_the_install(web_server: str) -> None:
    host = make_host(name="lab1")
    otto = make_user("otto", "operator", password=PASSWORD)
    now = datetime.now(UTC)
    steps = [[step, (now - timedelta(seconds=ago)).isoformat()] for step, ago in
             (("source", 50), ("configure", 40), ("make", 20))]  # fmt: skip
    build = make_build(host, queued_by=otto, state=BuildState.BUILDING, started_at=now - timedelta(seconds=50),
                       step="make", steps=steps)  # fmt: skip
    PgBuild.objects.filter(pk=build.pk).update(created_at=now - timedelta(seconds=55))
    live.reset_job_stream(BUILD, build.pk)
    publish_state(build, BuildState.QUEUED, now - timedelta(seconds=55))
    publish_state(build, BuildState.BUILDING, now - timedelta(seconds=50))
    publish_step(build, "source", "source", now - timedelta(seconds=50))
    publish(build, "log", {"line": "dpkg-source: info: extracting postgresql-15 in src"})
    publish_step(build, "configure", "configure", now - timedelta(seconds=40))
    for number in range(1, 41):
        publish(build, "log", {"line": f"checking for feature {number}... yes"})
    publish_step(build, "make", "make", now - timedelta(seconds=20))
    publish(build, "progress", {"step": "make", "percent": 12.0, "eta_s": 146})
    with signed_in(web_server, "otto", f"/builds/{build.pk}/", height=1000) as (page, violations, errors):
        wait_until(page, f"{LOG_LINES} === 41", timeout_ms=10_000)
        steps_then = page.eval_on_selector_all("#build-steps li", "items => items.map((i) => i.className)")
        times_then = page.eval_on_selector_all("#build-steps li", STEP_TIMES)
        progress_then = progress_said(page), page.eval_on_selector("#build-progress", "p => p.value")

        for number in range(1, 31):
            publish(build, "log", {"line": f"gcc -O2 -c src/backend/file{number}.c"})
        publish(build, "progress", {"step": "make", "percent": 64.5, "eta_s": 33})
        wait_until(page, "document.getElementById('build-progress').value === 64.5", timeout_ms=10_000)
        wait_until(page, f"{LOG_LINES} === 71", timeout_ms=10_000)
        progress_now = progress_said(page)
        followed = page.evaluate(LOG_AT_BOTTOM)
        page.screenshot(path=str(ARTIFACTS / "build-page-live.png"), full_page=True)

        # It is verified and registered: the page becomes the finished one, with the install.
        done_at = datetime.now(UTC).isoformat()

        def finish() -> None:
            label = "PostgreSQL 15.20, 4 kB pages (benchlab build)"
            install = PgInstall.objects.create(
                host=host, bin_dir=f"{build.prefix}/bin", version="15.20", block_size=4096, label=label
            )
            PgBuild.objects.filter(pk=build.pk).update(
                state=BuildState.DONE, finished_at=datetime.now(UTC), pg_install=install, step="", progress=None,
                built_version="15.20", built_block_size=4096, built_wal_block_size=8192, built_segment_size=1024**3,
                pgbench_version="pgbench (PostgreSQL) 15.20", source_sha256="9c" * 32,
                steps=[*steps, ["install", done_at], ["verify", done_at]],
                log="checking for feature 40... yes\ngcc -O2 -c src/backend/file30.c",
            )  # fmt: skip

        in_another_thread(finish)
        publish_step(build, "install", "install", datetime.now(UTC))
        publish_step(build, "verify", "verification", datetime.now(UTC))
        publish_state(build, BuildState.DONE, datetime.now(UTC))
        page.wait_for_selector("#build-install", timeout=15_000)
        finished_state = text(page, "#build-state")
        block_size = text(page, "#built-block-size")
        queue_run = page.get_attribute("#queue-run", "href")
        finished_steps = page.eval_on_selector_all("#build-steps li", "items => items.map((i) => i.className)")
        times_done = page.eval_on_selector_all("#build-steps li", STEP_TIMES)
        page.screenshot(path=str(ARTIFACTS / "build-page-done.png"), full_page=True)

    assert steps_then == ["build-step step-done", "build-step step-done", "build-step step-current",
                          "build-step step-pending", "build-step step-pending"]  # fmt: skip
    assert progress_then == ("make 12 % · about 2 min 26 s left", 12)
    assert progress_now == "make 65 % · about 33 s left"
    assert followed, "the log did not follow its newest line"
    assert finished_state == "done" and block_size == "4 kB"
    assert queue_run is not None and f"pg_install={PgBuild.objects.get(pk=build.pk).pg_install_id}" in queue_run
    assert finished_steps == ["build-step step-done"] * 5
    # Each step from its start to its end (the step before ends as the next starts; a build
    # recorded without ends shows them so too), the one in progress open-ended.
    clock = r"\d\d:\d\d:\d\d"
    assert [bool(re.fullmatch(f"{clock}–{clock}", t)) for t in times_then[:2]] == [True, True], times_then
    assert re.fullmatch(f"{clock}–…", times_then[2]) and times_then[3:] == ["", ""], times_then
    assert times_then[0].split("–")[1] == times_then[1].split("–")[0], times_then
    assert all(re.fullmatch(f"{clock}–{clock}", t) for t in times_done), times_done
    assert [t.split("–")[1] for t in times_done[:-1]] == [t.split("–")[0] for t in times_done[1:]], times_done
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_a_failed_builds_page_says_where_with_the_command_and_its_output(web_server: str) -> None:
    host = make_host(name="lab2")
    start = datetime(2025, 4, 1, 14, 3, 20, tzinfo=UTC)
    steps = [["source", start.isoformat()], ["configure", (start + timedelta(seconds=9)).isoformat()]]
    output = "checking for readline... no\nconfigure: error: readline library not found\nIf you have readline already installed, see config.log"  # noqa: E501
    command = "./configure --prefix=/var/lib/benchlab/builds/pg-15.20-b4k-w8k-s1g-x --with-blocksize=4"
    build = make_build(host, state=BuildState.FAILED, started_at=start, finished_at=start + timedelta(seconds=14),
                       step="configure", steps=steps, failed_step="configure", failed_exit_status=1,
                       failed_command=command, failed_output=output,
                       error="configure failed: readline library not found",
                       log="== source ==\ndpkg-source: info: extracting\n== configure ==\n" + output,
                       queued_by=make_user("otto", "operator"))  # fmt: skip
    PgBuild.objects.filter(pk=build.pk).update(created_at=start - timedelta(seconds=5))
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/builds/{build.pk}/", height=1000) as (page, violations, errors):
        heading = text(page, "#build-failure h2")
        failed_step = page.get_attribute("#step-configure", "class")
        shown_output = text(page, "#failed-output")
        page.click("#build-log summary")
        kept_log = text(page, "#build-log")
        page.screenshot(path=str(ARTIFACTS / "build-page-failed.png"), full_page=True)

    assert heading == "Failed at configure"
    assert failed_step == "build-step step-failed"
    assert "configure: error: readline library not found" in shown_output
    assert "== configure == checking for readline... no" in kept_log
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_cancel_asks_first_naming_the_build(web_server: str) -> None:
    host = make_host(name="lab1")
    otto = make_user("otto", "operator", password=PASSWORD)
    build = make_build(host, queued_by=otto)
    live.reset_job_stream(BUILD, build.pk)
    with signed_in(web_server, "otto", f"/builds/{build.pk}/", height=700) as (page, violations, errors):
        hidden_before = page.is_hidden("#cancel")
        page.click("#cancel-open")
        question = text(page, "#cancel-question")
        page.screenshot(path=str(ARTIFACTS / "build-page-cancel-confirm.png"))
        page.click("#cancel")
        page.wait_for_load_state()
        message = text(page, ".messages")
        state = text(page, "#build-state")

    assert hidden_before
    assert question == f"Cancel build {build.pk} (lab1, PostgreSQL 15.20, queued, queued by otto)?"
    assert message == f"Build {build.pk} cancelled: it left the queue before anything ran."
    assert state == "cancelled"
    assert not violations, violations
    assert not errors, errors


@BROWSER
def test_the_build_pages_have_no_serious_accessibility_violations(web_server: str) -> None:
    host = make_host(name="lab1")
    otto = make_user("otto", "operator", password=PASSWORD)
    running = make_build(host, queued_by=otto, state=BuildState.BUILDING, step="make", progress=40.0,
                         started_at=datetime.now(UTC), steps=[["make", datetime.now(UTC).isoformat()]])  # fmt: skip
    failed = make_build(host, options=dataclasses.replace(options_4k(), block_size_kb=2), state=BuildState.FAILED,
                        failed_step="make", failed_command="make -j4", failed_exit_status=2,
                        failed_output="gram.y:12: error: syntax error", error="make failed")  # fmt: skip
    live.reset_job_stream(BUILD, running.pk)
    publish(running, "progress", {"step": "make", "percent": 40.0, "eta_s": 90})
    reports: dict[str, list[dict[str, Any]]] = {}
    with chromium(height=900) as (context, violations):
        page = context.new_page()
        log_in(page, web_server, "otto")
        checker = axe_context(context)
        checked = checker.new_page()
        pages = {"builds": "/builds/", "build-form": "/builds/new/", "build-running": f"/builds/{running.pk}/",
                 "build-failed": f"/builds/{failed.pk}/"}  # fmt: skip
        for name, path in pages.items():
            checked.goto(f"{web_server}{path}")
            checked.wait_for_load_state()
            checked.screenshot(path=str(ARTIFACTS / f"a11y-{name}.png"), full_page=True)
            reports[name] = axe_report(checked, name)
        checker.close()

    # The form with a host's sources and its error summary: checked with lab1's real sources below.
    found = {name: serious(report, name) for name, report in reports.items()}
    assert len(found) == 4 and not {name: lines for name, lines in found.items() if lines}, found
    assert not violations, violations


@BROWSER
def test_the_form_lists_the_sources_lab1_has_with_version_and_checksum_and_keeps_the_choice_when_refused(
    page_server: str, lab_inventory: dict[str, Host]
) -> None:
    host = lab_inventory["lab1"]
    version, tarball, sha256 = newest_cached_tarball()
    release = f"postgresql-{version}.tar.bz2"
    tarball_source(tarball, sha256, name=release)  # a release tarball in the tests' tarball directory
    debian = f"debian:postgresql-15={max(cached_sources(), key=version_order)}"
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/builds/new/", height=1100) as (page, violations, errors):
        with page.expect_navigation():
            page.select_option("#host-choice", str(host.pk))
        checker = axe_context(page.context)
        checked = checker.new_page()
        checked.goto(page.url)
        reports = {"build-form-sources": axe_report(checked, "build-form-sources")}
        rows = page.eval_on_selector_all(
            "#sources tbody tr",
            "rows => rows.map((r) => [r.dataset.key, r.querySelector('.version').textContent.trim(),"
            " r.querySelector('.sha256').textContent, r.querySelector('.sha256').title])",
        )
        page.screenshot(path=str(ARTIFACTS / "build-form-sources.png"), full_page=True)
        page.check(f"#sources tr[data-key='{debian}'] input[type=radio]")
        page.select_option("#id_block_size_kb", "4")
        page.check("#id_configure_flags_2")  # --with-icu
        page.check("#id_configure_flags_3")  # --without-icu
        page.click("#queue-build")
        page.wait_for_load_state()
        summary = text(page, "#error-summary")
        kept = page.eval_on_selector("#sources input[type=radio]:checked", "r => r.value")
        block_size = page.input_value("#id_block_size_kb")
        page.screenshot(path=str(ARTIFACTS / "build-form-sources-refused.png"), full_page=True)
        checked.check(f"#sources tr[data-key='{debian}'] input[type=radio]")
        checked.check("#id_configure_flags_2")
        checked.check("#id_configure_flags_3")
        checked.click("#queue-build")
        checked.wait_for_load_state()
        reports["build-form-errors"] = axe_report(checked, "build-form-errors")
        checker.close()

    assert [debian, version, f"{sha256[:12]}…", f"SHA-256 {sha256}"] in rows, rows
    assert [f"tarball:{release}", version, f"{sha256[:12]}…", f"SHA-256 {sha256}"] in rows, rows
    assert "Configure flags: --with-icu and --without-icu contradict each other: pick one." in summary, summary
    assert kept == debian and block_size == "4"
    assert not PgBuild.objects.exists()
    found = {name: serious(report, name) for name, report in reports.items()}
    assert not {name: lines for name, lines in found.items() if lines}, found
    assert not violations, violations
    assert [e for e in errors if "400 from" not in e] == [], errors  # the refused form itself is a 400
