"""The regressions page in a real browser (chromium under Playwright, against uvicorn; no worker): an
operator acknowledges the tps step and marks the latency one expected with a note; the open list
empties and "all" shows both with who did it. Screenshots go to test-artifacts/."""

import pytest

from runs.bench.specs import RunSpec
from runs.models import ChangePointState, StoredChangePoint
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_user
from runs.tests.watch.history import make_history
from runs.watch.series import series_key
from runs.watch.services.detect import watch_detect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_an_operator_acknowledges_one_change_point_and_marks_another_expected(page_server: str) -> None:
    otto = make_user("otto", "operator", password=PASSWORD)
    history = make_history(otto)
    watch_detect(series_key(RunSpec.from_run(history.rounds[0][0])))
    tps = StoredChangePoint.objects.get(metric="steady_tps")
    latency = StoredChangePoint.objects.get(metric="latency_avg")
    with signed_in(page_server, "otto", "/regressions/", height=900) as (page, violations, errors):
        page.screenshot(path=str(ARTIFACTS / "regressions-open.png"), full_page=True)
        listed = page.locator("#regressions tbody tr").all_text_contents()
        page.click(f"#cp-{tps.pk} button[value=acknowledged]")
        page.wait_for_selector(f"#cp-{tps.pk}", state="detached")
        page.fill(f"#cp-{latency.pk} input[name=note]", "kernel 6.1.0-26 applied on lab1")
        page.click(f"#cp-{latency.pk} button[value=expected]")
        page.wait_for_selector(f"#cp-{latency.pk}", state="detached")
        empty = page.locator("#regressions tbody").text_content() or ""
        page.click("#regression-filters >> text=all")
        page.wait_for_selector(f"#cp-{tps.pk}")
        page.screenshot(path=str(ARTIFACTS / "regressions-all.png"), full_page=True)
        tps_state = page.locator(f"#cp-{tps.pk} .cp-state").text_content() or ""
        latency_state = page.locator(f"#cp-{latency.pk} .cp-state").text_content() or ""
        compare_href = page.locator(f"#cp-{tps.pk} a >> text=compare").get_attribute("href")

    assert len(listed) == 2 and "+9.8 % (95 % CI +8.8 to +10.8 %)" in " ".join(listed)
    assert "No open change point." in empty
    assert "acknowledged" in tps_state and "by otto" in tps_state
    assert "expected" in latency_state and "kernel 6.1.0-26 applied on lab1" in latency_state
    assert compare_href == tps.comparison_url
    tps.refresh_from_db()
    latency.refresh_from_db()
    assert (tps.state, latency.state) == (ChangePointState.ACKNOWLEDGED, ChangePointState.EXPECTED)
    assert not violations and not errors, violations + errors
