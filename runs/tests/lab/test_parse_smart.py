"""runs/lab/parse/smart.py on real smartctl output (runs/tests/fixtures/README.md, `smart/`)."""

import json

import pytest

from runs.lab.parse.smart import NVME_DATA_UNIT_BYTES, smart_from_json
from runs.tests.captured import captured


def test_it_reads_an_nvme_drives_wear_errors_and_bytes_written() -> None:
    health = smart_from_json(captured("smart/smartctl-7.1-nvme-intel-660p.json"))
    assert health.none_reason == ""
    assert health.protocol == "NVMe"
    assert health.wear_pct_used == 0.0
    assert health.media_errors == 0
    assert health.bytes_written == 7773431 * NVME_DATA_UNIT_BYTES  # 3.98 TB
    assert health.power_on_hours == 2401
    assert health.critical_warning == 0
    assert health.temperature_c == 36
    assert health.passed is True
    assert health.raw["model_name"] == "INTEL SSDPEKNW010T8"


def test_it_reads_a_sata_ssds_wear_from_the_normalised_wear_leveling_count() -> None:
    health = smart_from_json(captured("smart/smartctl-7.0-sata-ssd-samsung-860evo.json"))
    assert health.protocol == "ATA"
    assert health.wear_pct_used == 19.0  # normalised value 81 of 100
    assert health.media_errors == 0  # Reallocated_Sector_Ct
    assert health.bytes_written == 64777770148 * 512  # Total_LBAs_Written times logical block size
    assert health.power_on_hours == 14551
    assert health.temperature_c == 36
    assert health.passed is True
    assert health.critical_warning is None


def test_a_hard_disk_has_no_wear_but_its_other_figures() -> None:
    health = smart_from_json(captured("smart/smartctl-7.0-sata-hdd-wd140edfz.json"))
    assert health.none_reason == ""
    assert health.wear_pct_used is None
    assert health.bytes_written is None
    assert health.power_on_hours == 1730
    assert health.media_errors == 0
    assert health.passed is True


def test_a_loop_device_has_no_smart_data_with_smartctls_reason() -> None:
    health = smart_from_json(captured("smart/smartctl-7.3-loop-device.json"))
    assert health.none_reason == "no SMART data: /dev/loop18: Unable to detect device type"
    assert {k: v for k, v in health.figures().items() if v is not None} == {"protocol": ""}
    assert health.raw["smartctl"]["exit_status"] == 1


def test_warning_bits_of_the_exit_status_still_give_the_figures() -> None:
    data = json.loads(captured("smart/smartctl-7.1-nvme-intel-660p.json"))
    data["smartctl"]["exit_status"] = 0b01000100  # error log has entries, self-test log errors
    health = smart_from_json(json.dumps(data))
    assert health.none_reason == ""
    assert health.wear_pct_used == 0.0


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("smartctl 6.6 2016-05-31\nUNRECOGNIZED OPTION: --json=c", "smartmontools 7 or later is needed"),
        ("", "no output"),
        (
            '{"smartctl": {"exit_status": 0}, "smart_support": {"available": false}, "model_name": "QEMU HARDDISK"}',
            "QEMU HARDDISK does not support SMART",
        ),
        (
            '{"smartctl": {"exit_status": 2, "messages": [{"string": "Smartctl open device: /dev/sdz failed"}]}}',
            "Smartctl open device: /dev/sdz failed",
        ),
    ],
)
def test_what_gives_no_figures_says_why(text: str, reason: str) -> None:
    health = smart_from_json(text)
    assert health.none_reason.startswith("no SMART data: ")
    assert reason in health.none_reason
