"""End to end in a real browser: Debian's chromium driven by Playwright, against uvicorn and a
real Celery worker, running on the virtual lab. Screenshots go to test-artifacts/."""

from io import StringIO

import pytest
from django.core.management import call_command

from runs.management.commands.lab_register import lab_host_name
from runs.models import AuditAction, AuditEvent, RunState
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in, signed_in, wait_until
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.virtual_lab import VirtualLab
from runs.tests.workers import CeleryWorker

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_an_operator_queues_a_run_watches_it_live_and_sees_the_results(
    virtual_lab: VirtualLab, web_server: str
) -> None:
    call_command("lab_register", "--id", str(virtual_lab.lab_id), stdout=StringIO())
    make_user("otto", "operator", password=PASSWORD)
    lab1 = lab_host_name(virtual_lab.lab_id, "lab1")
    with signed_in(web_server, "otto", "/runs/new/", height=1100) as (page, violations, _errors):
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
        listing = page.context.new_page()  # the same session
        listing.goto(f"{web_server}/runs/")
        listing.evaluate("window.notReloaded = true")
        listing_state = f"document.querySelector('td.state[data-run=\"{run_id}\"]').textContent.trim()"

        # The chart gains points while the run runs.
        wait_until(page, "window.benchlabCharts.tps.data.datasets[0].data.length >= 3", timeout_ms=120_000)
        live_points = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.length")
        live_state = page.text_content("#run-state")
        page.screenshot(path=str(ARTIFACTS / "run-live.png"), full_page=True)

        page.wait_for_selector("section.results", timeout=180_000)
        page.screenshot(path=str(ARTIFACTS / "run-results.png"), full_page=True)
        results = page.text_content("section.results") or ""
        final_points = page.evaluate("window.benchlabCharts.tps.data.datasets[0].data.length")
        wait_until(listing, f"{listing_state} === 'done'", timeout_ms=30_000)
        listing_live = listing.evaluate("window.notReloaded === true")

    assert live_state in ("warming up", "measuring", "collecting")
    assert 3 <= live_points <= final_points
    assert final_points >= 8
    assert "steady-state tps" in results and "noatime" in results
    assert "p95" in results and "warm-up excluded" in results
    assert listing_live, "the run list reloaded instead of updating the row"
    assert not violations, violations
    assert (ARTIFACTS / "run-live.png").stat().st_size > 10_000


def test_refusals_locks_and_the_audit_log_in_the_browser(celery_worker: CeleryWorker, web_server: str) -> None:
    """The pages that say no, and the admins' audit log: each shown, each within the policy."""
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    otto = make_user("otto", "operator", password=PASSWORD)
    make_user("olga", "operator", password=PASSWORD)
    make_user("ada", "admin", password=PASSWORD)
    make_user("lockme", "viewer", password=PASSWORD)
    run = make_run(host, device, pg, state=RunState.MEASURING, queued_by=otto)
    AuditEvent.objects.create(actor_name="otto", action=AuditAction.RUN_QUEUED, object_type="run",
                              object_id=str(run.pk), object_repr=str(run), message="lab1:ssd0 ext4")  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium(height=900) as (context, violations):
        page = context.new_page()
        for _ in range(5):
            log_in(page, web_server, "lockme", "wrong")
        locked = page.text_content("#locked-out") or ""
        page.screenshot(path=str(ARTIFACTS / "login-locked-out.png"), full_page=True)

        page.context.clear_cookies()
        log_in(page, web_server, "olga")
        page.goto(f"{web_server}/runs/{run.pk}/")
        cancel_refusal = page.text_content("#cancel-refusal") or ""
        cancel_disabled = page.is_disabled("#cancel")
        page.screenshot(path=str(ARTIFACTS / "run-cancel-refused.png"), full_page=True)
        page.goto(f"{web_server}/runs/new/?again=%C2%B2")
        bad_request = page.text_content("#refusal") or ""
        page.screenshot(path=str(ARTIFACTS / "bad-request.png"), full_page=True)

        page.context.clear_cookies()
        log_in(page, web_server, "ada")
        page.goto(f"{web_server}/admin/runs/auditevent/")
        audit = page.text_content("#result_list") or ""
        page.screenshot(path=str(ARTIFACTS / "admin-audit-log.png"), full_page=True)
        page.goto(f"{web_server}/admin/runs/host/{host.pk}/change/")
        own_server_flag = page.is_visible("#id_allow_runs_on_benchlab_server")
        page.screenshot(path=str(ARTIFACTS / "admin-host.png"), full_page=True)
        page.goto(f"{web_server}/admin/")

    assert "5 wrong passwords in a row for lockme" in locked
    assert cancel_disabled and "Only otto, who queued this run, or an admin can cancel it." in cancel_refusal
    assert "again (the run to queue again) must be an id" in bad_request
    assert "run queued" in audit and "otto" in audit
    assert own_server_flag
    assert not violations, violations
