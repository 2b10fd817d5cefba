""" "Read health now" in a real browser (chromium under Playwright, against uvicorn; no worker):
the click returns at once to the device page, which says the reading is under way and since when;
once the reading is stored (the worker's service, called here on another thread with a fake host
answering the SATA SSD's real smartctl output) the page shows it by itself. Screenshots go to
test-artifacts/health-now-pending.png and health-now-done.png."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from runs.inventory.services import device_health as service
from runs.inventory.services.device_health import device_health_read
from runs.lab.transport.interface import Transport
from runs.tests.bench.test_browser_run_page import in_another_thread
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.builds.test_browser_builds import BROWSER
from runs.tests.captured import captured
from runs.tests.factories import make_device, make_host, make_user
from runs.tests.inventory.test_device_health import SATA_SSD, SmartHost


@BROWSER
def test_the_page_says_a_reading_is_under_way_then_shows_it_once_stored(
    page_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    device = make_device(make_host(name="lab1"), name="ssd0", model="Samsung SSD 860 EVO 500GB")
    make_user("otto", "operator", password=PASSWORD)

    @contextmanager
    def connected(*args: Any, **kwargs: Any) -> Iterator[Transport]:
        yield SmartHost(captured(SATA_SSD))

    monkeypatch.setattr(service, "host_connected", connected)
    with signed_in(page_server, "otto", f"/devices/{device.pk}/", height=1600) as (page, violations, errors):
        page.click("#read-health")
        page.wait_for_selector("#health-ask")
        pending = " ".join((page.text_content("#device-health") or "").split())
        disabled = page.is_disabled("#read-health")
        page.locator("#device-health").screenshot(path=str(ARTIFACTS / "health-now-pending.png"))
        in_another_thread(lambda: device_health_read(device.pk))  # the worker's task
        wait_until(page, "!document.getElementById('health-ask') && !!document.getElementById('health-chart')", 10_000)
        page.wait_for_timeout(300)
        done = " ".join((page.text_content("#health-latest") or "").split())
        page.locator("#device-health").screenshot(path=str(ARTIFACTS / "health-now-done.png"))
    assert "Reading the health on lab1… asked" in pending and "smartctl can take up to a minute" in pending
    assert disabled
    assert "wear 19 % used, 0 reallocated sectors, 33.2 TB written, SMART passed" in done
    assert "read by an operator" in done
    assert not violations and not errors, violations + errors
