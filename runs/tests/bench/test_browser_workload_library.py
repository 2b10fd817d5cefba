"""The workload library on the queue form in a browser: choosing a library script shows its
description and its parameters with their ranges, a value out of range is refused naming the
range (by the browser, and by the server when the browser's check is bypassed), and a good one
queues a run whose page shows the script as run."""

import re

import pytest

from runs.models import Run, RunState, WorkloadScript
from runs.tests.bench.test_browser_pgbench_options import BROWSER
from runs.tests.bench.test_browser_run_form import lab2
from runs.tests.bench.test_browser_run_page import text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user

pytestmark = pytest.mark.browser


@BROWSER
def test_the_form_shows_the_chosen_scripts_parameters_and_refuses_one_out_of_range(page_server: str) -> None:
    host = lab2()
    script = WorkloadScript.objects.get(name="skewed-zipfian", version=1)
    other = WorkloadScript.objects.get(name="insert-only", version=1)
    skew, rows = f"#param-{script.pk}-skew", f"#param-{other.pk}-rows"
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/runs/new/", height=2400) as (page, violations, _errors):
        page.select_option("#id_server_host", label=host.name)
        page.select_option("#id_pg_install", label=str(host.pg_installs.get(version="15.19")))
        page.fill("#id_scale", "2")
        hidden_before = page.locator("#id_library_script").is_hidden()
        page.select_option("#id_workload", "library")
        page.select_option("#id_library_script", str(script.pk))
        shown = page.locator(skew).is_visible() and not page.locator(rows).is_visible()
        description = text(page, f"#library-script-{script.pk} .library-description")
        limits = (page.get_attribute(skew, "min"), page.get_attribute(skew, "max"), page.input_value(skew))
        page.fill(skew, "0.5")
        browser_refused = page.evaluate(f"document.querySelector('{skew}').validity.rangeUnderflow")
        page.evaluate("document.getElementById('run-form').noValidate = true")  # the server's own check
        page.click("form.run-form button[type=submit]")
        page.wait_for_selector("#id_workload_params_error")
        refused = text(page, "#id_workload_params_error")
        still_shown = page.locator(skew).is_visible()
        page.locator("#library-params").screenshot(path=str(ARTIFACTS / "run-form-library-refused.png"))
        page.fill(skew, "3")
        page.click("form.run-form button[type=submit]")
        page.wait_for_url(re.compile(r"/runs/\d+/$"))
        page.click("#run-script summary")
        workload = text(page, "#run-workload")
        as_run = text(page, "#run-script pre")
        page.locator("#run-script").screenshot(path=str(ARTIFACTS / "run-page-library-script.png"))

    assert hidden_before and shown and still_shown
    assert "random_zipfian" in description
    assert limits == ("1.001", "1000", "1.1")
    assert browser_refused
    assert refused == "skewed-zipfian v1: skew must be between 1.001 and 1000, not 0.5."
    run = Run.objects.get()
    assert (run.library_script, run.workload_params, run.state) == (script, {"skew": 3}, RunState.QUEUED)
    assert workload.startswith("skewed-zipfian v1 (skew 3)")
    assert "\\set skew 3.0" in as_run
    assert violations == []
