"""A device's history in a real browser (chromium under Playwright, against uvicorn; no worker, no
lab): its series across studies, its fio baselines over time and its SMART health over time, made
by hand (runs, baselines, readings from real smartctl output). Screenshots go to test-artifacts/."""

import json
from datetime import timedelta

from django.utils import timezone

from runs.inventory.services.device_health import health_reading_store
from runs.lab.parse.smart import smart_from_json
from runs.models import Device, DeviceHealthReading, HealthSource
from runs.tests.baselines.test_browser_baselines import done_baseline
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.builds.test_browser_builds import BROWSER
from runs.tests.captured import captured
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

WRITTEN_TB = (31.2, 32.0, 33.17)  # a SATA SSD's Total_LBAs_Written, growing between readings
WEAR_LEFT = (83, 82, 81)  # its Wear_Leveling_Count's normalised value


def _readings(device: Device) -> None:
    """Three readings of the Samsung 860 EVO's real output, aged and worn a little each month."""
    base = json.loads(captured("smart/smartctl-7.0-sata-ssd-samsung-860evo.json"))
    for n, (tb, left) in enumerate(zip(WRITTEN_TB, WEAR_LEFT, strict=True)):
        for row in base["ata_smart_attributes"]["table"]:
            if row["name"] == "Total_LBAs_Written":
                row["raw"]["value"] = round(tb * 10**12 / 512)
            if row["name"] == "Wear_Leveling_Count":
                row["value"] = left
        health_reading_store(device=device, health=smart_from_json(json.dumps(base)), source=HealthSource.OPERATOR)
        DeviceHealthReading.objects.filter(pk=DeviceHealthReading.objects.latest("pk").pk).update(
            read_at=timezone.now() - timedelta(days=60 - 30 * n)
        )


@BROWSER
def test_the_device_page_shows_its_series_fio_baselines_and_health_over_time(page_server: str) -> None:
    host = make_host(name="lab1")
    device = make_device(host, name="ssd0", model="Samsung SSD 860 EVO 500GB")
    install = make_pg_install(host)
    start = timezone.now() - timedelta(days=5)
    for n, tps in enumerate((2595.2, 2601.0, 2580.4, 2610.9)):
        make_run(host, device, install, started_at=start + timedelta(days=n), steady_tps_mean=tps)
    for days, factor in ((40, 1.0), (20, 0.95), (1, 0.9)):
        done_baseline(device, days, factor)
    _readings(device)
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(page_server, "vera", f"/devices/{device.pk}/", height=2200) as (page, violations, errors):
        wait_until(page, "!!(window.Chart && Chart.getChart('health-chart') && Chart.getChart('iops-chart'))", 10_000)
        page.wait_for_timeout(300)
        page.locator("#history").screenshot(path=str(ARTIFACTS / "device-history.png"))
        series = page.locator("#device-series-list tbody tr").all_text_contents()
        latest = page.locator("#health-latest").text_content() or ""
        drawn = page.evaluate("() => Chart.getChart('health-chart').data.datasets.map(d => [d.label, d.data])")
        button = (page.is_disabled("#read-health"), page.text_content("#read-health-refusal") or "")
        fio_rows = page.locator("#baseline-history tbody tr").count()
    assert len(series) == 1 and "lab1 · lab1:ssd0" in series[0] and "2,610.9" in series[0].replace(" ", "")
    assert "wear 19 % used, 0 reallocated sectors, 33.2 TB written, SMART passed" in latest
    assert drawn == [
        ["wear % used", [17, 18, 19]],
        ["media errors", [0, 0, 0]],
        ["TB written", list(WRITTEN_TB)],
    ]
    # A viewer sees the button disabled, with why.
    assert button[0] and button[1].startswith("Operators read a device's health; you are a viewer"), button
    assert fio_rows == 3
    assert not violations and not errors, violations + errors
