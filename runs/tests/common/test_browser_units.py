"""The durations a page's script writes after loading (a live step's time, a time left) read as
the server writes them: static/js/units.js against the `duration` template filter, in a real
browser, for every run, build and fio baseline page that loads it."""

from pathlib import Path

import pytest
from django.conf import settings

from runs.common.units import duration
from runs.tests.browser import chromium

# Whole seconds and fractions that round the same way in Python (half to even) and JavaScript
# (half up): the pages' clocks are never at exactly half a second for long.
SECONDS = [0, 0.4, 1, 59, 59.6, 60, 61, 125, 3599, 3600, 3601, 3725, 7500, 86399, 90061]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_pages_script_writes_a_duration_as_the_server_does(page_server: str) -> None:
    with chromium(400) as (context, violations):
        page = context.new_page()
        page.goto(f"{page_server}/accounts/login/")
        page.add_script_tag(url=f"{page_server}/static/js/units.js")
        written = page.evaluate(f"{SECONDS}.map((s) => window.benchlabUnits.duration(s))")
    assert written == [duration(s) for s in SECONDS]  # "1 h 2 min" for 3725: the baseline page said "62 min 5 s"
    assert violations == []


@pytest.mark.parametrize("template", ["run_detail", "build_detail", "baseline_detail"])
def test_every_live_detail_page_loads_units_before_its_own_script(template: str) -> None:
    text = (Path(settings.BASE_DIR) / "templates" / "runs" / f"{template}.html").read_text(encoding="utf-8")
    assert text.index("js/units.js") < text.index(f"js/{template}.js")
