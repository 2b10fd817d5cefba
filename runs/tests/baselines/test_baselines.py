"""fio baselines (issue 15, point 3) with the lab boundary faked: what is refused and with
which words (and that nothing is created then), the shared queue with runs and builds, a
worker's run, failure, cancel and the sweeper, the pages, the API, the comparison partial and
campaigns that measure their devices first.

fio on real hosts through a real worker is test_baseline_lab.py; the pages in a browser
test_browser_baselines.py.
"""

from collections.abc import Callable
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from knox.models import AuthToken
from pytest_django.fixtures import DjangoCaptureOnCommitCallbacks
from rest_framework.test import APIClient

from runs.baselines.selectors import baselines_for_devices
from runs.baselines.services import execute as baseline_execute
from runs.baselines.services import sweeper as baseline_sweeper
from runs.baselines.services.baselines import baseline_queue
from runs.baselines.services.execute import baseline_execute as execute
from runs.inventory.services import connect as inventory_connect
from runs.jobs.cancel import JobRefused, job_cancel
from runs.jobs.dispatch import queue_dispatch_jobs, release_hosts
from runs.jobs.heartbeat import stale_after_s
from runs.jobs.kinds import BASELINE, KINDS
from runs.jobs.selectors import baseline_wait
from runs.jobs.sweeper import release_orphans, resend_claimed_jobs, sweep_stale
from runs.lab.errors import CommandFailed
from runs.lab.fio.plan import FioSettings, MiB
from runs.lab.fio.run import FioCancelled, FioResult, FioTarget
from runs.lab.parse.fio import parse_fio_json
from runs.models import AuditEvent, BaselineState, Device, DeviceBaseline, Host, Run, RunState
from runs.tests.builds.test_builds import make_build
from runs.tests.captured import captured
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.sent_tasks import record_sent_tasks

pytestmark = pytest.mark.django_db
FIXTURE = captured("fio-3.33-file-all-jobs.json")
SHORT = FioSettings(size_bytes=64 * MiB, runtime_s=2, ramp_s=0)


def wipeable(host: Host, **fields: Any) -> Device:
    defaults: dict[str, Any] = {"name": "ssd0", "wipe_allowed": True, "capacity_bytes": 2**30}
    return make_device(host, **(defaults | fields))


def fio_result(settings: FioSettings, mode: str = "raw") -> FioResult:
    output = parse_fio_json(FIXTURE)
    target = FioTarget(mode=mode, path="/dev/loop9", description="raw device /dev/disk/by-id/x (/dev/loop9)")
    return FioResult(target, settings, "fio --output-format=json …", output.fio_version, output.jobs, output.notes,
                     raw_json=FIXTURE)  # fmt: skip


class FakeTransport:
    label = "fake"

    def close(self) -> None:
        pass


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The lab boundary faked (connections, run_fio, the sweeper's cleanup); no task leaves this
    process (the dispatcher's sends are recorded)."""
    fake = SimpleNamespace(fio=None, cleaned=[], sent=[], sent_runs=[], sent_builds=[])

    def run_fio(transport: Any, connect: Callable[[], Any], identity: Any, settings: FioSettings, run_key: str,
                on_started: Any = None, on_line: Any = None) -> FioResult:  # fmt: skip
        assert fake.fio is not None, "the test did not say what fio does"
        return fake.fio(identity, settings, run_key, on_line)

    monkeypatch.setattr(baseline_execute, "host_connect_for_run", lambda host: FakeTransport())
    monkeypatch.setattr(baseline_execute, "host_connect", lambda host: FakeTransport())
    monkeypatch.setattr(baseline_execute, "run_fio", run_fio)
    monkeypatch.setattr(inventory_connect, "host_connect", lambda host, **options: FakeTransport())  # the sweeper
    monkeypatch.setattr(
        baseline_sweeper, "clean_fio_leftovers", lambda t, identity, key: fake.cleaned.append(key) or ["stopped fio"]
    )
    sent = record_sent_tasks(monkeypatch)
    fake.sent, fake.sent_runs = sent["runs.execute_baseline"], sent["runs.execute_run"]
    fake.sent_builds = sent["runs.execute_build"]
    return fake


# ---- refusals: said clearly, nothing created ----


def test_it_refuses_a_protected_block_device_and_creates_nothing(lab: SimpleNamespace) -> None:
    device = make_device(make_host(), wipe_allowed=False)
    with pytest.raises(ValidationError) as refused:
        baseline_queue(device=device, settings=SHORT, by=make_user("otto", "operator"))
    message = refused.value.message_dict["device"][0]
    assert "does not allow benchlab to wipe" in message and "fio would write it raw" in message
    assert not DeviceBaseline.objects.exists() and not AuditEvent.objects.exists()
    assert lab.sent == []


def test_it_accepts_a_directory_device_that_may_not_be_wiped(lab: SimpleNamespace) -> None:
    device = make_device(make_host(), name="data", path="/srv/benchlab-data", wipe_allowed=False)
    baseline = baseline_queue(device=device, settings=SHORT, by=make_user("otto", "operator"))
    assert baseline.state == BaselineState.QUEUED and baseline.host_id == device.host_id


def test_bad_settings_are_refused_field_by_field_with_the_lab_layers_words(lab: SimpleNamespace) -> None:
    device = wipeable(make_host())
    bad = FioSettings(size_bytes=MiB, runtime_s=0, ramp_s=0, jobs=("seq-read", "nope"), ioengine="aio")
    with pytest.raises(ValidationError) as refused:
        baseline_queue(device=device, settings=bad, by=make_user("otto", "operator"))
    errors = refused.value.message_dict
    assert set(errors) == {"size_bytes", "runtime_s", "jobs", "ioengine"}
    assert errors["runtime_s"] == ["The runtime per job must be 1 to 3600 s, not 0."]
    assert "'nope'" in errors["jobs"][0]
    too_big = FioSettings(size_bytes=4 * 2**30)
    with pytest.raises(ValidationError) as refused:
        baseline_queue(device=device, settings=too_big, by=make_user("ada", "admin"))
    assert "more than lab1:ssd0's capacity" in refused.value.message_dict["size_bytes"][0]
    assert not DeviceBaseline.objects.exists()


# ---- one line per host, shared with runs and builds ----


def test_runs_builds_and_baselines_on_one_host_start_in_the_order_they_were_queued(lab: SimpleNamespace) -> None:
    host = make_host()
    device, pg = wipeable(host), make_pg_install(host)
    otto = make_user("otto", "operator")
    run = make_run(host, device, pg, state=RunState.QUEUED)
    baseline = baseline_queue(device=device, settings=SHORT, by=otto)
    build = make_build(host)

    first = queue_dispatch_jobs()
    assert first.runs == [run.pk] and first.baselines == [] and first.builds == []
    assert [str(wait) for wait in baseline_wait(baseline)] == [f"lab1 busy with run {run.pk}"]
    release_hosts(run)
    Run.objects.filter(pk=run.pk).update(state=RunState.DONE)

    second = queue_dispatch_jobs()
    assert second.baselines == [baseline.pk] and second.builds == [] and second.runs == []
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id == baseline.pk
    assert queue_dispatch_jobs().builds == []  # the host has a baseline: nothing else starts

    lab.fio = lambda identity, settings, key, on_line: fio_result(settings)
    assert execute(baseline_id=baseline.pk) == BaselineState.DONE
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None
    # Its end gave the host to the build, next in line.
    assert Host.objects.get(pk=host.pk).claimed_by_build_id == build.pk


def test_a_baseline_queued_behind_another_says_how_many_are_ahead(lab: SimpleNamespace) -> None:
    host = make_host()
    device = wipeable(host)
    otto = make_user("otto", "operator")
    first = baseline_queue(device=device, settings=SHORT, by=otto)
    queue_dispatch_jobs()
    second = baseline_queue(device=device, settings=SHORT, by=otto)
    third = baseline_queue(device=device, settings=SHORT, by=otto)
    assert [str(wait) for wait in baseline_wait(third)] == [f"lab1 busy with fio baseline {first.pk}; 1 ahead of it"]
    assert queue_dispatch_jobs().baselines == []
    assert second.state == BaselineState.QUEUED


# ---- a worker's run ----


def test_a_worker_stores_every_figure_the_raw_json_and_where_fio_wrote(lab: SimpleNamespace) -> None:
    device = wipeable(make_host())
    baseline = baseline_queue(device=device, settings=SHORT, by=make_user("otto", "operator"))
    queue_dispatch_jobs()
    seen: list[tuple[str, str]] = []

    def fio(identity: Any, settings: FioSettings, key: str, on_line: Any) -> FioResult:
        seen.append((identity.path, key))
        on_line("fio: a warning")
        return fio_result(settings)

    lab.fio = fio
    assert execute(baseline_id=baseline.pk) == BaselineState.DONE
    baseline.refresh_from_db()
    assert seen == [(device.path, baseline.run_key)]
    assert baseline.target_mode == "raw" and baseline.target_description.startswith("raw device")
    assert baseline.fio_json == FIXTURE and baseline.fio_version.startswith("fio-3")
    every = {"seq-write", "seq-read", "rand-read-qd1", "rand-read-qd32", "rand-write-qd1", "rand-write-qd32"}
    assert set(baseline.results) == set(baseline.jobs) == every
    figures = baseline.figures
    assert all(value is not None and value > 0 for value in figures.values()), figures
    assert (figures["rand_read_iops_qd32"] or 0) > (figures["rand_read_iops_qd1"] or 0)
    assert baseline.results["seq-read"]["write"] is None
    assert "fio: a warning" in baseline.log and baseline.progress == 100.0 and baseline.finished_at is not None


def test_a_failing_fio_ends_the_baseline_failed_with_fios_reason_and_frees_the_host(lab: SimpleNamespace) -> None:
    host = make_host()
    baseline = baseline_queue(device=wipeable(host), settings=SHORT, by=make_user("otto", "operator"))
    queue_dispatch_jobs()

    def fio(*args: Any) -> FioResult:
        raise CommandFailed("fio --output-format=json …", 1, "", "fio: io_u error on file /dev/loop9: EIO", "lab1")

    lab.fio = fio
    assert execute(baseline_id=baseline.pk) == BaselineState.FAILED
    baseline.refresh_from_db()
    assert "io_u error" in baseline.error and baseline.failed_exit_status == 1
    assert "EIO" in baseline.failed_output and baseline.results == {}
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None


def test_a_queued_baseline_cancelled_leaves_the_line_and_frees_its_claim(lab: SimpleNamespace) -> None:
    host = make_host()
    otto = make_user("otto", "operator")
    baseline = baseline_queue(device=wipeable(host), settings=SHORT, by=otto)
    queue_dispatch_jobs()
    job_cancel(baseline, by=otto)
    assert baseline.state == BaselineState.CANCELLED
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None
    assert execute(baseline_id=baseline.pk) == BaselineState.CANCELLED  # its task, delivered late, does nothing


def test_fio_stopped_by_a_cancel_ends_the_baseline_cancelled(lab: SimpleNamespace) -> None:
    host = make_host()
    otto = make_user("otto", "operator")
    baseline = baseline_queue(device=wipeable(host), settings=SHORT, by=otto)
    queue_dispatch_jobs()

    def fio(*args: Any) -> FioResult:
        DeviceBaseline.objects.filter(pk=baseline.pk).update(cancel_requested=True)
        raise FioCancelled("fio on lab1 was stopped before its jobs finished")

    lab.fio = fio
    assert execute(baseline_id=baseline.pk) == BaselineState.CANCELLED
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None


def test_only_the_operator_who_queued_it_or_an_admin_may_cancel(lab: SimpleNamespace) -> None:
    baseline = baseline_queue(device=wipeable(make_host()), settings=SHORT, by=make_user("otto", "operator"))
    with pytest.raises(JobRefused, match="Only otto, who queued this baseline, or an admin"):
        job_cancel(baseline, by=make_user("olga", "operator"))
    job_cancel(baseline, by=make_user("ada", "admin"))
    assert baseline.state == BaselineState.CANCELLED


def test_the_sweeper_fails_a_baseline_whose_worker_died_and_cleans_up(lab: SimpleNamespace) -> None:
    host = make_host()
    baseline = baseline_queue(device=wipeable(host), settings=SHORT, by=make_user("otto", "operator"))
    queue_dispatch_jobs()
    long_ago = timezone.now() - timedelta(seconds=stale_after_s() + 60)
    DeviceBaseline.objects.filter(pk=baseline.pk).update(
        state=BaselineState.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )
    assert sweep_stale(baseline_sweeper.BASELINE_RECOVERY) == [baseline.pk]
    baseline.refresh_from_db()
    assert baseline.state == BaselineState.FAILED and "the worker running fio stopped" in baseline.error
    assert "stopped fio" in baseline.error and lab.cleaned == [baseline.run_key]
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None


def test_a_baseline_whose_task_was_lost_is_sent_again_and_an_ended_ones_host_is_freed(
    lab: SimpleNamespace, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    host = make_host()
    baseline = baseline_queue(device=wipeable(host), settings=SHORT, by=make_user("otto", "operator"))
    with django_capture_on_commit_callbacks(execute=True):
        queue_dispatch_jobs()
        assert resend_claimed_jobs()[BASELINE] == [baseline.pk]  # its task lost: sent again
    assert lab.sent == [baseline.pk, baseline.pk]

    long_ago = timezone.now() - timedelta(seconds=stale_after_s() + 60)
    DeviceBaseline.objects.filter(pk=baseline.pk).update(state=BaselineState.DONE, heartbeat_at=long_ago)
    assert release_orphans(KINDS[BASELINE]) == 1  # its worker died before releasing the host
    assert Host.objects.get(pk=host.pk).claimed_by_baseline_id is None


# ---- pages ----


def test_the_form_says_a_protected_device_cannot_be_measured_before_anything_is_sent(
    client_for: ClientFactory, lab: SimpleNamespace
) -> None:
    device = make_device(make_host(), wipe_allowed=False)
    otto = client_for("otto")
    page = otto.get(reverse("baseline-new") + f"?device={device.pk}").content.decode()
    assert 'id="device-refusal"' in page and "does not allow benchlab to wipe" in page
    answer = otto.post(reverse("baseline-new"), {"device": device.pk, "size_mib": 64, "runtime_s": 2, "ramp_s": 0,
                                                  "jobs": ["rand-read-qd1"], "ioengine": "libaio"})  # fmt: skip
    assert answer.status_code == 400 and "does not allow benchlab to wipe" in answer.content.decode()
    assert not DeviceBaseline.objects.exists()
    assert client_for("vera").get(reverse("baseline-new")).status_code == 403


def test_the_form_queues_and_the_baseline_page_shows_its_wait(client_for: ClientFactory, lab: SimpleNamespace) -> None:
    device = wipeable(make_host())
    fields = {"device": device.pk, "size_mib": 64, "runtime_s": 2, "ramp_s": 0,
              "jobs": ["rand-read-qd1", "seq-read"], "ioengine": "libaio"}  # fmt: skip
    answer = client_for("otto").post(reverse("baseline-new"), fields)
    baseline = DeviceBaseline.objects.get()
    assert answer.status_code == 302 and answer["Location"] == reverse("baseline-detail", args=[baseline.pk])
    assert baseline.jobs == ["seq-read", "rand-read-qd1"]  # standard order
    page = client_for("vera").get(answer["Location"]).content.decode()
    assert "fio baseline" in page and 'id="baseline-steps"' in page


def test_the_device_page_shows_claims_vs_measured_history_and_the_json_download(
    client_for: ClientFactory, lab: SimpleNamespace
) -> None:
    host = make_host()
    device = wipeable(host, claimed_seq_read_mb_s=500.0, claimed_rand_read_iops=1_000_000.0)
    baseline = baseline_queue(device=device, settings=SHORT, by=make_user("olaf", "operator"))
    queue_dispatch_jobs()
    lab.fio = lambda identity, settings, key, on_line: fio_result(settings)
    execute(baseline_id=baseline.pk)
    baseline.refresh_from_db()
    make_run(host, device, make_pg_install(host), steady_tps_mean=1234.5)

    vera = client_for("vera")
    page = vera.get(reverse("device-detail", args=[device.pk])).content.decode()
    assert 'id="claims-vs-measured"' in page and 'id="bandwidth-chart"' in page and "device-chart-data" in page
    measured = baseline.figure("seq_read_mb_s")
    assert measured is not None and f"{round(100 * measured / 500)} %" in page
    assert f'id="history-{baseline.pk}"' in page and "1,234.5" in page and "not claimed" in page
    download = vera.get(reverse("baseline-json", args=[baseline.pk]))
    assert download.status_code == 200 and download.content.decode() == FIXTURE
    assert "attachment" in download["Content-Disposition"]
    detail = vera.get(reverse("baseline-detail", args=[baseline.pk])).content.decode()
    assert 'id="figures"' in detail and 'id="claims-vs-measured"' in detail
    assert vera.get(reverse("baselines")).status_code == 200


def test_the_comparison_shows_each_devices_latest_baseline(lab: SimpleNamespace, client_for: ClientFactory) -> None:
    host = make_host()
    measured, never = wipeable(host), wipeable(host, name="hdd0", path="/dev/disk/by-id/ata-TEST_HDD_1")
    otto = make_user("olga", "operator")
    lab.fio = lambda identity, settings, key, on_line: fio_result(settings)
    for _ in range(2):
        baseline = baseline_queue(device=measured, settings=SHORT, by=otto)
        queue_dispatch_jobs()
        execute(baseline_id=baseline.pk)
    rows = baselines_for_devices([measured.pk, never.pk, measured.pk])
    assert [(row.device.pk, row.baseline.pk if row.baseline else None) for row in rows] == [
        (measured.pk, baseline.pk),  # the latest of the two
        (never.pk, None),
    ]
    html = render_to_string("runs/_compare_baselines.html", {"device_baselines": rows})
    assert f'href="{reverse("baseline-detail", args=[baseline.pk])}"' in html
    assert "raw device" in html and "no fio baseline of this device has finished" in html
    assert render_to_string("runs/_compare_baselines.html", {"device_baselines": []}).strip() == ""

    # On the comparison page itself, beside the pgbench results of runs on both devices.
    install = make_pg_install(host)
    runs = [make_run(host, device, install, steady_tps_mean=100.0) for device in (measured, never)]
    page = client_for("vera").get(reverse("compare"), {"runs": ",".join(str(r.pk) for r in runs)})
    shown = page.content.decode()
    assert page.status_code == 200 and 'id="compare-baselines"' in shown
    for device in (measured, never):
        assert f'id="compare-baseline-device-{device.pk}"' in shown


# ---- the API ----


def api_as(role_user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(role_user)[1]}")
    return client


def test_the_api_queues_201_and_refuses_400_field_by_field_creating_nothing(lab: SimpleNamespace) -> None:
    host = make_host()
    device, protected = wipeable(host), make_device(host, name="sys", path="/dev/disk/by-id/ata-SYS")
    api = api_as(make_user("otto", "operator"))
    answer = api.post("/api/baselines/", {"device": device.pk, "size_mib": 64, "runtime_s": 2,
                                          "jobs": ["rand-read-qd1"]}, format="json")  # fmt: skip
    assert answer.status_code == 201, answer.content
    assert answer.json()["state"] == "queued" and answer.json()["jobs"] == ["rand-read-qd1"]
    bad = api.post(
        "/api/baselines/", {"device": device.pk, "size_mib": 1, "runtime_s": 0, "jobs": ["x"]}, format="json"
    )
    assert bad.status_code == 400 and set(bad.json()) == {"size_mib", "runtime_s", "jobs"}
    refused = api.post("/api/baselines/", {"device": protected.pk}, format="json")
    assert refused.status_code == 400 and "does not allow benchlab to wipe" in refused.json()["device"][0]
    assert DeviceBaseline.objects.count() == 1
    listed = api_as(make_user("vera", "viewer")).get(f"/api/baselines/?device={device.pk}").json()
    assert [row["id"] for row in listed["results"]] == [answer.json()["id"]]
    assert api_as(make_user("viv", "viewer")).post("/api/baselines/", {"device": device.pk}).status_code == 403


# ---- campaigns ----


def test_a_campaign_with_fio_baselines_queues_one_per_device_before_its_runs(lab: SimpleNamespace) -> None:
    from runs.bench.specs import RunSpec
    from runs.campaigns.matrix import Variable
    from runs.campaigns.services.campaigns import CampaignPlan, campaign_create

    host = make_host()
    ssd, hdd = wipeable(host), wipeable(host, name="hdd0", path="/dev/disk/by-id/ata-TEST_HDD_1", capacity_bytes=None)
    pg = make_pg_install(host)
    base = RunSpec(server_host_id=host.pk, device_id=ssd.pk, pg_install_id=pg.pk, filesystem="ext4",
                   scale=1, clients=2, threads=1, duration_s=5)  # fmt: skip
    plan = CampaignPlan(name="fs", description="", base=base, variables=[Variable("device", (ssd.pk, hdd.pk))],
                        repetitions=2, fio_baseline=True)  # fmt: skip
    campaign = campaign_create(plan=plan, by=make_user("otto", "operator"))
    baselines = list(campaign.baselines.order_by("pk"))
    assert [b.device_id for b in baselines] == [ssd.pk, hdd.pk] and campaign.fio_baseline
    first_run = Run.objects.filter(campaign=campaign).order_by("pk").first()
    assert first_run is not None and all(b.created_at <= first_run.created_at for b in baselines)
    assert queue_dispatch_jobs().baselines == [baselines[0].pk]  # the first baseline has the host first
