"""The import page in a real browser (Debian's chromium under Playwright, against uvicorn): an
operator uploads pgbench 15's output with a cut-short progress file and is told the file and the
line, then the whole files and lands on the imported run's page, whose badge, facts, chart and
figures show (and no empty iostat charts), and which the run list lists marked imported.
Screenshots go to test-artifacts/."""

from pathlib import Path

import pytest

from runs.models import Run
from runs.tests.bench.test_browser_run_page import text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_device, make_host, make_pg_install, make_user
from runs.tests.imports.files import DATA

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@BROWSER
def test_an_operator_imports_pgbench_output_in_the_browser(page_server: str, tmp_path: Path) -> None:
    host = make_host(name="lab1")
    device = make_device(host, name="ssd0")
    pg = make_pg_install(host)
    make_user("otto", "operator", password=PASSWORD)
    data = DATA / "pg15" / "tx"
    cut = tmp_path / "cut-progress.txt"
    cut.write_text((data / "progress.txt").read_text()[:-15])
    with signed_in(page_server, "otto", "/runs/import/", height=1100) as (page, violations, errors):

        def fill_setup() -> None:
            page.select_option("#id_server_host", str(host.pk))
            page.select_option("#id_device", str(device.pk))
            page.select_option("#id_filesystem", "ext4")
            page.fill("#id_mount_options", "noatime")
            page.select_option("#id_pg_install", str(pg.pk))

        fill_setup()
        page.set_input_files("#id_summary", str(data / "summary.txt"))
        page.set_input_files("#id_progress", str(cut))
        with page.expect_navigation():
            page.click("#import-submit")
        refused = text(page, "#error-summary")
        page.screenshot(path=str(ARTIFACTS / "import-refused.png"), full_page=True)

        fill_setup()
        page.set_input_files("#id_summary", str(data / "summary.txt"))
        page.set_input_files("#id_progress", str(data / "progress.txt"))
        page.set_input_files("#id_transaction_logs", [str(p) for p in sorted(data.glob("pgbench_log.*"))])
        with page.expect_navigation():
            page.click("#import-submit")
        page.wait_for_selector("#run-imported")
        run_url = page.url
        badge, imported, figures = text(page, "h1"), text(page, "#run-imported"), page.content()
        no_os_metrics, os_charts = text(page, "#no-os-metrics"), page.locator("#iostat-util-chart").count()
        page.screenshot(path=str(ARTIFACTS / "import-run-page.png"), full_page=True)
        page.goto(f"{page_server}/runs/")
        listed = text(page, "#run-list tbody")
        page.screenshot(path=str(ARTIFACTS / "import-run-list.png"), full_page=True)

    assert "Nothing was imported." in refused
    assert "line 4 of cut-progress.txt: the file ends in the middle of a line: it is cut short" in refused
    run = Run.objects.get()
    assert run_url.endswith(f"/runs/{run.pk}/")
    assert "done" in badge and "imported" in badge
    assert imported.startswith("by otto, from summary.txt (report), progress.txt (report), pgbench_log.")
    assert "470.3" in figures or "470.29" in figures  # the report's tps
    assert "this one was imported" in no_os_metrics and os_charts == 0  # no empty iostat charts
    assert "imported by otto" in listed
    assert not violations, violations
    # The refused form answers 400 (as scripts are told); nothing else may fail.
    assert [error for error in errors if not error.endswith(f"400 from {page_server}/runs/import/")] == [], errors
