""" "Read health now" on the device page (runs/inventory/services/device_health.py): the request
claims, audits and queues a reading and returns at once; the worker's task reads and stores it,
a failure included; the page says it is under way, since when, and counts one never stored within
its bound as failed. No worker here: the task's service is called as the worker would."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from runs.inventory.selectors import HEALTH_READ_BOUND
from runs.inventory.services import device_health as service
from runs.inventory.services.device_health import CONNECT_TIMEOUT_S, READ_TASK, device_health_read
from runs.lab.errors import HostNotAnswering
from runs.lab.host.smart import READ_TIMEOUT_S
from runs.lab.parse.smart import SmartHealth
from runs.lab.transport.interface import Transport
from runs.models import AuditAction, AuditEvent, Device, DeviceHealthReading, HealthSource
from runs.tests.captured import captured
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.inventory.test_device_health import SATA_SSD, SmartHost
from runs.tests.sent_tasks import record_sent_tasks
from runs.tests.virtual_lab import scratch_disk

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The device ids whose reading was handed to a worker."""
    return record_sent_tasks(monkeypatch)[READ_TASK]


def click(client_for: ClientFactory, device: Device, capture: Any) -> str:
    """Press "Read health now" as otto; the device page it returns to."""
    with capture(execute=True):  # the task is sent once the request's transaction commits
        response = client_for("otto").post(f"/devices/{device.pk}/health", follow=True)
    assert response.redirect_chain == [(f"/devices/{device.pk}/", 302)]
    return response.content.decode()


def fake_host(monkeypatch: pytest.MonkeyPatch, stdout: str) -> None:
    @contextmanager
    def connected(*args: Any, **kwargs: Any) -> Iterator[Transport]:
        yield SmartHost(stdout)

    monkeypatch.setattr(service, "host_connected", connected)


def test_the_click_queues_the_reading_audits_it_and_the_page_says_it_is_under_way(
    client_for: ClientFactory, django_capture_on_commit_callbacks: Any, sent: list[int]
) -> None:
    device = make_device(make_host())
    page = click(client_for, device, django_capture_on_commit_callbacks)
    assert sent == [device.pk] and not DeviceHealthReading.objects.exists()
    assert "Reading the health on lab1…" in page and 'id="read-health" disabled' in page
    event = AuditEvent.objects.get(action=AuditAction.DEVICE_HEALTH_READ)
    assert (event.actor_name, event.object_id, event.message) == ("otto", str(device.pk), "reading asked")
    state = client_for("vera").get(f"/devices/{device.pk}/health.json").json()
    assert state["pending"] is True and state["overdue"] is False and state["asked_at"]


def test_a_second_click_while_one_is_under_way_queues_nothing(
    client_for: ClientFactory, django_capture_on_commit_callbacks: Any, sent: list[int]
) -> None:
    device = make_device(make_host())
    click(client_for, device, django_capture_on_commit_callbacks)
    page = click(client_for, device, django_capture_on_commit_callbacks)
    assert sent == [device.pk] and AuditEvent.objects.count() == 1
    assert "a reading of lab1:ssd0 is already under way" in page


def test_the_task_stores_the_reading_clears_the_ask_and_the_page_shows_it(
    client_for: ClientFactory, django_capture_on_commit_callbacks: Any, sent: list[int], monkeypatch: Any
) -> None:
    device = make_device(make_host())
    fake_host(monkeypatch, captured(SATA_SSD))
    click(client_for, device, django_capture_on_commit_callbacks)
    assert device_health_read(sent[0]) == "ATA health read"
    reading = DeviceHealthReading.objects.get()
    assert (reading.source, reading.protocol, reading.wear_pct_used) == (HealthSource.OPERATOR, "ATA", 19.0)
    page = client_for("vera").get(f"/devices/{device.pk}/").content.decode()
    assert "wear 19 % used, 0 reallocated sectors, 33.2 TB written, SMART passed" in page
    assert 'id="health-ask"' not in page
    assert client_for("vera").get(f"/devices/{device.pk}/health.json").json()["pending"] is False
    assert device_health_read(device.pk) == "nothing asked"  # a second delivery stores nothing more


def test_a_host_that_does_not_answer_is_a_reading_that_says_so(
    client_for: ClientFactory, django_capture_on_commit_callbacks: Any, sent: list[int], monkeypatch: Any
) -> None:
    device = make_device(make_host())

    @contextmanager
    def away(*args: Any, **kwargs: Any) -> Iterator[Transport]:
        raise HostNotAnswering("lab1 (10.200.0.11): timed out")
        yield

    monkeypatch.setattr(service, "host_connected", away)
    click(client_for, device, django_capture_on_commit_callbacks)
    device_health_read(device.pk)
    reading = DeviceHealthReading.objects.get()
    assert reading.none_reason == "could not read the health of lab1:ssd0: lab1 (10.200.0.11): timed out"
    page = client_for("vera").get(f"/devices/{device.pk}/").content.decode()
    assert reading.none_reason in page and 'id="health-ask"' not in page


def test_a_busy_host_is_refused_at_the_click_and_again_by_the_worker(
    client_for: ClientFactory, django_capture_on_commit_callbacks: Any, sent: list[int], monkeypatch: Any
) -> None:
    host = make_host()
    device = make_device(host)
    fake_host(monkeypatch, "")  # never reached
    run = make_run(host, device, make_pg_install(host), state="running")
    host.claimed_by = run
    host.save()
    page = click(client_for, device, django_capture_on_commit_callbacks)
    assert f"lab1 is busy with run {run.pk}" in page and sent == []
    Device.objects.filter(pk=device.pk).update(health_asked_at=timezone.now())  # asked before the run took it
    device_health_read(device.pk)
    assert DeviceHealthReading.objects.get().none_reason.startswith(f"not read: lab1 is busy with run {run.pk}")


def test_a_reading_never_stored_within_its_bound_is_shown_failed_and_may_be_asked_again(
    client_for: ClientFactory, django_capture_on_commit_callbacks: Any, sent: list[int]
) -> None:
    device = make_device(make_host())
    overran = timezone.now() - HEALTH_READ_BOUND - timedelta(seconds=1)
    Device.objects.filter(pk=device.pk).update(health_asked_at=overran)
    page = client_for("vera").get(f"/devices/{device.pk}/").content.decode()
    assert "failed: it was not stored within 3 minutes" in page
    assert client_for("vera").get(f"/devices/{device.pk}/health.json").json() | {"asked_at": ""} == {
        "pending": False,
        "overdue": True,
        "asked_at": "",
    }
    page = click(client_for, device, django_capture_on_commit_callbacks)
    assert sent == [device.pk] and "Reading the health on lab1…" in page


def test_a_late_task_clears_only_its_own_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ask that overran, asked again while its worker was still reading: the new one stays."""
    device = make_device(make_host())
    Device.objects.filter(pk=device.pk).update(health_asked_at=timezone.now() - HEALTH_READ_BOUND * 2)
    asked_again = timezone.now()

    def slow_read(device: Device) -> SmartHealth:
        Device.objects.filter(pk=device.pk).update(health_asked_at=asked_again)  # the second click
        return SmartHealth(none_reason="no SMART data: a test")

    monkeypatch.setattr(service, "_health_now", slow_read)
    device_health_read(device.pk)
    assert Device.objects.get(pk=device.pk).health_asked_at == asked_again
    assert DeviceHealthReading.objects.count() == 1


def test_the_bound_leaves_room_for_the_slowest_reading_a_worker_may_take() -> None:
    assert HEALTH_READ_BOUND.total_seconds() > CONNECT_TIMEOUT_S + READ_TIMEOUT_S + 60


def test_the_task_reads_a_real_loop_device(
    client_for: ClientFactory, django_capture_on_commit_callbacks: Any, sent: list[int]
) -> None:
    host = make_host(name="here", address="127.0.0.1", transport="local", private_key_path="")
    with scratch_disk("smartbutton", 8 * 2**20) as link:
        device = make_device(host, path=link, kind="loop")
        click(client_for, device, django_capture_on_commit_callbacks)
        device_health_read(device.pk)
    reading = DeviceHealthReading.objects.get(device=device)
    assert reading.source == HealthSource.OPERATOR and reading.wear_pct_used is None
    assert "Unable to detect device type" in reading.none_reason


def test_a_viewer_may_not_ask_for_a_reading(client_for: ClientFactory, sent: list[int]) -> None:
    device = make_device(make_host())
    assert client_for("vera").post(f"/devices/{device.pk}/health").status_code == 403
    assert sent == [] and Device.objects.get(pk=device.pk).health_asked_at is None
