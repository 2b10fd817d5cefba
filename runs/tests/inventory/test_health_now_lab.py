""" "Read health now" through a real Celery worker on the virtual lab: the click returns at once
with the reading under way, and the worker's task (runs.tasks.read_device_health) reads smartctl
over SSH on the device's host and stores the reading (a loop device: one that says it has no SMART
data, smartctl's own words), then clears the ask."""

import time

import pytest
from django.test import Client

from runs.models import AuditEvent, Device, DeviceHealthReading, HealthSource, Host
from runs.tests.bench.test_run_execution import lab_inventory
from runs.tests.factories import make_user
from runs.tests.waits import refreshed_until
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_the_worker_reads_the_health_the_click_asked_for_and_stores_it(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    device = lab_inventory["lab1"].devices.get(name="hdd")
    otto = Client()
    otto.force_login(make_user("otto", "operator"))

    started = time.monotonic()
    response = otto.post(f"/devices/{device.pk}/health")
    answered_s = time.monotonic() - started
    assert response.status_code == 302 and answered_s < 2, answered_s  # no smartctl while the browser waits
    assert Device.objects.get(pk=device.pk).health_asked_at is not None

    device = refreshed_until(device, lambda d: d.health_asked_at is None, 90, "its reading stored")
    reading = DeviceHealthReading.objects.get(device=device)
    assert reading.source == HealthSource.OPERATOR and reading.run is None
    assert reading.none_reason.startswith("no SMART data: "), reading.none_reason
    assert reading.raw["smartctl"]["version"][0] >= 7  # smartctl itself answered, over SSH
    assert AuditEvent.objects.filter(object_id=str(device.pk), message="reading asked").count() == 1
    page = otto.get(f"/devices/{device.pk}/").content.decode()
    assert reading.none_reason[:40] in page and 'id="health-ask"' not in page
