"""A device's SMART/NVMe health: read on its host (runs/lab/host/smart.py), stored as a reading
(runs/inventory/services/device_health.py), shown on the device page with its series across
studies and its fio baselines (runs/views/devices.py)."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from runs.bench.services.observer import RunObserver
from runs.bench.services.results import store_results
from runs.inventory.selectors import device_health, health_verdict
from runs.inventory.services.device_health import health_reading_store
from runs.lab.benchmark.run import BenchmarkResult
from runs.lab.errors import HostNotAnswering
from runs.lab.host.smart import read_smart, read_smart_after_run
from runs.lab.parse.smart import smart_from_json
from runs.lab.storage.prepare import PreparedStorage
from runs.lab.transport.interface import Command, CommandResult, Transport
from runs.lab.transport.local import LocalTransport
from runs.models import DeviceHealthReading, HealthSource
from runs.tests.captured import captured
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.virtual_lab import scratch_disk
from runs.watch.summaries import series_list

NVME = "smart/smartctl-7.1-nvme-intel-660p.json"
SATA_SSD = "smart/smartctl-7.0-sata-ssd-samsung-860evo.json"


class SmartHost(Transport):
    """Answers the smartctl read with `stdout` and `status`; notes the argv it was asked."""

    label = "lab1"

    def __init__(self, stdout: str, status: int = 0) -> None:
        self.stdout, self.status, self.asked = stdout, status, list[tuple[str, ...]]()

    def execute(self, command: Command) -> CommandResult:
        self.asked.append(command.argv)
        return CommandResult(command.line, self.status, self.stdout, "")

    def write_file(self, remote: str, content: bytes, mode: int = 0o644) -> None:
        raise AssertionError("a health read writes nothing")

    def close(self) -> None:
        pass


def test_the_device_node_is_an_argument_of_the_script_never_part_of_it() -> None:
    host = SmartHost(captured(NVME))
    health = read_smart(host, "/dev/nvme0n1; reboot")
    assert health.wear_pct_used == 0.0
    (argv,) = host.asked
    assert argv[-1] == "/dev/nvme0n1; reboot" and "reboot" not in argv[2]


def test_a_host_without_smartctl_says_how_to_install_it() -> None:
    health = read_smart(SmartHost("", status=127), "/dev/sda")
    assert health.none_reason == "smartctl is not installed on lab1 (Debian: apt install smartmontools)"


def test_a_directory_device_has_no_smart_and_nothing_is_run() -> None:
    host = SmartHost("")
    assert read_smart(host, "/srv/bench").none_reason.startswith("no SMART data: /srv/bench is not a device node")
    assert host.asked == []


def test_a_host_lost_after_the_run_costs_only_the_reading() -> None:
    class Lost(SmartHost):
        def execute(self, command: Command) -> CommandResult:
            raise HostNotAnswering("lab1 does not answer")

    health = read_smart_after_run(Lost(""), "/dev/sda")
    assert health.none_reason == "the health could not be read: lab1 does not answer"


def test_the_real_smartctl_says_a_loop_device_has_no_smart_data() -> None:
    """smartmontools on this machine (scripts/install-system-packages) against a loop device."""
    with scratch_disk("smart", 8 * 2**20) as link:
        health = read_smart(LocalTransport(), link)
    assert health.none_reason.startswith("no SMART data: ")
    assert "Unable to detect device type" in health.none_reason
    assert health.raw["smartctl"]["version"][0] >= 7


@pytest.mark.django_db
def test_a_runs_reading_is_stored_once_however_often_its_results_are() -> None:
    host = make_host()
    device = make_device(host)
    run = make_run(host, device, make_pg_install(host))
    health = smart_from_json(captured(NVME))
    for _ in range(2):
        health_reading_store(device=device, health=health, source=HealthSource.RUN, run=run)
    reading = DeviceHealthReading.objects.get()
    assert reading.run == run and reading.bytes_written == 7773431 * 512_000
    assert health_verdict(reading) == "wear 0 % used, 0 media errors, 4.0 TB written, SMART passed"


def _series_on(device: Any, host: Any, pg: Any, rounds: int, tps: float) -> None:
    start = timezone.now() - timedelta(days=rounds)
    for n in range(rounds):  # a run outside campaigns is a round of its own
        make_run(host, device, pg, started_at=start + timedelta(days=n), steady_tps_mean=tps + n)


@pytest.mark.django_db
def test_series_list_filtered_to_a_device_has_only_its_series_with_the_last_tps() -> None:
    host = make_host()
    pg = make_pg_install(host)
    ssd, hdd = make_device(host), make_device(host, name="hdd0", path="/dev/disk/by-id/ata-TEST_HDD_1")
    _series_on(ssd, host, pg, 3, 100.0)
    _series_on(hdd, host, pg, 2, 50.0)
    (only,) = series_list(device_id=ssd.pk)
    assert only.rounds == 3 and only.last_tps == 102.0
    assert len(series_list()) == 2


@pytest.mark.django_db
def test_the_device_pages_history_is_read_in_a_fixed_number_of_queries(
    client_for: ClientFactory, django_assert_max_num_queries: Any
) -> None:
    host = make_host()
    pg = make_pg_install(host)
    device = make_device(host)
    client = client_for("vera")
    client.get(f"/devices/{device.pk}/")  # the session and permissions, once

    def page_queries() -> tuple[str, int]:
        with django_assert_max_num_queries(30) as counted:
            body = client.get(f"/devices/{device.pk}/").content.decode()
        return body, len(counted.captured_queries)

    _, empty = page_queries()
    _series_on(device, host, pg, 3, 100.0)
    for name, days in ((NVME, 3), (SATA_SSD, 1)):
        health_reading_store(device=device, health=smart_from_json(captured(name)), source=HealthSource.OPERATOR)
        DeviceHealthReading.objects.filter(pk=DeviceHealthReading.objects.latest("pk").pk).update(
            read_at=timezone.now() - timedelta(days=days)
        )
    body, full = page_queries()
    # The series list's fixed eight (runs.watch.summaries) but its first, and the readings: not one
    # query per series or reading.
    assert full <= empty + 8
    assert "wear 19 % used" in body and 'id="device-health-data"' in body
    assert len(device_health(device).chart["points"]) == 2


@pytest.mark.django_db
def test_the_health_a_run_collected_is_stored_with_its_results_once() -> None:
    host = make_host()
    device = make_device(host)
    run = make_run(host, device, make_pg_install(host))
    storage = PreparedStorage(mountpoint="/mnt/x", fstype="ext4", device_node="/dev/nvme0n1", mount_options="rw")
    result = BenchmarkResult(storage=storage, device_health=smart_from_json(captured(NVME)))
    for _ in range(2):  # a retried store
        store_results(run, result, {}, [], RunObserver(run))
    reading = DeviceHealthReading.objects.get()
    assert (reading.device, reading.run, reading.source) == (device, run, HealthSource.RUN)
    assert reading.protocol == "NVMe" and reading.media_errors == 0 and reading.power_on_hours == 2401
