"""fio baselines end to end: queued like a run, measured by a real Celery worker on the virtual
lab's raw devices, stored with fio's JSON; and a baseline cancelled while fio runs.

The ranking margin (>= 10x on QD1 random read IOPS and p50) is the one test_fio_lab.py proved
on this machine (240x and 350x apart at the closest of five repeats)."""

import time

import pytest
from django.test import Client
from django.urls import reverse

from runs.baselines.services.baselines import baseline_queue
from runs.jobs import live
from runs.jobs.cancel import job_cancel
from runs.jobs.kinds import BASELINE
from runs.jobs.live import events_after
from runs.lab.fio.plan import FioSettings, MiB
from runs.lab.transport.ssh import SSHTransport
from runs.models import BaselineState, DeviceBaseline, Host
from runs.tests.bench.test_run_execution import lab_inventory
from runs.tests.factories import make_user
from runs.tests.lab.test_fio_lab import fio_processes
from runs.tests.waits import refreshed_until
from runs.tests.workers import CeleryWorker

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
RUNS_ROOT = "/var/lib/benchlab/runs"


def nothing_left(lab1: SSHTransport, baseline: DeviceBaseline) -> bool:
    return lab1.run(["test", "-e", f"{RUNS_ROOT}/{baseline.run_key}"], check=False).exit_status != 0


def test_a_worker_measures_the_ram_disk_far_above_the_hdd_on_random_iops_and_latency(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], lab1: SSHTransport
) -> None:
    host = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    settings = FioSettings(size_bytes=64 * MiB, runtime_s=3, ramp_s=1, jobs=("rand-read-qd1", "rand-write-qd1"))
    ram = baseline_queue(device=host.devices.get(name="ram"), settings=settings, by=otto)
    hdd = baseline_queue(device=host.devices.get(name="hdd"), settings=settings, by=otto)

    ram, hdd = (refreshed_until(b, lambda b: b.is_finished, 180, "finished") for b in (ram, hdd))

    assert ram.state == hdd.state == BaselineState.DONE, (ram.error, hdd.error)
    assert ram.target_mode == hdd.target_mode == "raw"
    assert hdd.started_at is not None and ram.finished_at is not None and hdd.started_at >= ram.finished_at  # FIFO
    ram_iops, hdd_iops = ram.figure("rand_read_iops_qd1"), hdd.figure("rand_read_iops_qd1")
    ram_p50, hdd_p50 = ram.figure("read_lat_p50_ms"), hdd.figure("read_lat_p50_ms")
    assert ram_iops and hdd_iops and ram_p50 and hdd_p50
    assert ram_iops > 10 * hdd_iops, (ram_iops, hdd_iops)
    assert ram_p50 * 10 < hdd_p50, (ram_p50, hdd_p50)
    assert ram.figure("rand_write_iops_qd1") > 10 * (hdd.figure("rand_write_iops_qd1") or 0)  # type: ignore[operator]
    assert '"fio version"' in ram.fio_json and ram.command.startswith("fio --output-format=json")
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None
    assert nothing_left(lab1, ram) and nothing_left(lab1, hdd)
    kinds = [event.kind for event in events_after(live.job_stream(BASELINE, hdd.pk))]
    assert kinds[0] == "state" and "step" in kinds and "log" in kinds and kinds[-1] == "state"

    viewer = Client()
    viewer.force_login(make_user("vera", "viewer"))
    page = viewer.get(reverse("device-detail", args=[hdd.device_id])).content.decode()
    assert f'id="history-{hdd.pk}"' in page and "device-chart-data" in page


def test_a_baseline_cancelled_while_fio_runs_stops_fio_and_leaves_nothing(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], lab1: SSHTransport
) -> None:
    host = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    settings = FioSettings(size_bytes=32 * MiB, runtime_s=120, ramp_s=0, jobs=("rand-write-qd1",))
    baseline = baseline_queue(device=host.devices.get(name="hdd"), settings=settings, by=otto)
    baseline = refreshed_until(
        baseline, lambda b: b.state == BaselineState.RUNNING and "fio started" in b.log, 60, "running fio"
    )
    time.sleep(2)
    asked = time.monotonic()
    job_cancel(baseline, by=otto)
    baseline = refreshed_until(baseline, lambda b: b.is_finished, 60, "finished")

    assert baseline.state == BaselineState.CANCELLED, (baseline.error, baseline.failed_output)
    assert time.monotonic() - asked < 30
    assert baseline.results == {} and baseline.fio_json == ""
    assert fio_processes(lab1) == []
    assert nothing_left(lab1, baseline)
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None
