"""Drift in a real browser (Debian's chromium under Playwright, against uvicorn): a host whose
kernel changed between two runs shows it on its page (badge, warning, "Changes seen"), and the
comparison of runs from both sides says so in its warnings. Screenshots go to test-artifacts/."""

from datetime import timedelta

import pytest

from runs.models import Device, Run
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.compare.test_drift_pages import PG_BIN, START, before_this_feature, recorded
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def make_history() -> tuple[int, list[int]]:
    """lab1's runs over a fortnight: two from before drift was recorded, then 6.1.0-25, then
    6.1.0-26 from 9 Nov on (and the HDD's firmware updated the same day)."""
    host = make_host(name="lab1")
    pg = make_pg_install(host, bin_dir=PG_BIN, label="PG 15 (Debian)")
    ssd = make_device(host, name="ssd", kind=Device.Kind.SSD, model="Samsung SSD 860", capacity_bytes=500107862016)
    hdd = make_device(host, name="hdd", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD")
    ids = []
    for day, kernel, device in ((0, "6.1.0-25-amd64", ssd), (1, "6.1.0-25-amd64", hdd)):
        at = START + timedelta(days=day)
        ids.append(make_run(host, device, pg, started_at=at, environment=before_this_feature(kernel)).pk)
    for day, kernel, firmware in ((2, "6.1.0-25-amd64", "RVT04B6Q"), (5, "6.1.0-25-amd64", "RVT04B6Q"),
                                  (8, "6.1.0-26-amd64", "RVT05B6Q"), (10, "6.1.0-26-amd64", "RVT05B6Q")):  # fmt: skip
        at = START + timedelta(days=day)
        for device, tps in ((ssd, 1500.0 + day), (hdd, 300.0 + day)):
            run = make_run(host, device, pg, started_at=at, finished_at=at + timedelta(minutes=3),
                           steady_tps_mean=tps, tps=tps, environment=recorded(kernel, firmware=firmware))  # fmt: skip
            ids.append(run.pk)
    host.kernel, host.cpu_model, host.cpu_cores, host.memory_bytes = "6.1.0-26-amd64", "Xeon", 2, 25769803776
    host.distribution = "Debian GNU/Linux 12 (bookworm)"
    host.save()
    return host.pk, ids


def test_a_kernel_change_on_the_host_page_and_on_a_comparison(page_server: str) -> None:
    host_id, ids = make_history()
    ssd_runs = list(Run.objects.filter(pk__in=ids, device__name="ssd").values_list("pk", flat=True))
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(page_server, "vera", f"/hosts/{host_id}/", height=1100) as (page, violations, errors):
        page.screenshot(path=str(ARTIFACTS / "host-drift.png"), full_page=True)
        badge = page.locator("#drift-badge").text_content() or ""
        warning = page.locator("#drift-warning").text_content() or ""
        changes = page.locator("#host-drift-changes tbody tr").all_text_contents()
        device_changes = page.locator("#device-drift-hdd-changes tbody tr").all_text_contents()
        marks = page.locator("#host-runs .drift-mark").all_text_contents()
        not_recorded = page.locator("#host-drift-not-recorded li").all_text_contents()
        page.click("#host-drift-changes tbody tr >> a >> nth=1")  # the first run after the change
        page.wait_for_load_state()
        run_page = page.url

        page.goto(f"{page_server}/compare/?runs={','.join(map(str, ssd_runs))}")
        page.screenshot(path=str(ARTIFACTS / "compare-drift.png"), full_page=True)
        banner = page.locator("#drift-banner").text_content() or ""
        drift = page.locator("#drift-warnings li").all_text_contents()

    assert "changed 9 Nov 2026: lab1 kernel" in badge and "device hdd firmware" in badge
    assert "lab1: kernel changed" in warning and "6.1.0-25-amd64" in warning and "6.1.0-26-amd64" in warning
    assert len(changes) == 1 and "6.1.0-25-amd64" in changes[0] and "6.1.0-26-amd64" in changes[0]
    assert any("RVT04B6Q" in row and "RVT05B6Q" in row for row in device_changes)
    assert "kernel" in marks and "ssd firmware" in marks
    assert any("configure options" in line and "not a change" in line for line in not_recorded)
    assert run_page.rstrip("/").split("/")[-1].isdigit()
    assert "lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64" in banner
    assert any(line.startswith("lab1: kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64") for line in drift)
    assert any(line.startswith("lab1:ssd: firmware changed from RVT04B6Q to RVT05B6Q") for line in drift)
    assert not violations and not errors, violations + errors
