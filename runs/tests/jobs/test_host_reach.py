"""A host that does not answer at a job's start (jobs.host_reach), against a real refused
connection (a closed port on loopback): the run, build or fio baseline goes back to queued, its
host is marked unreachable and left alone until its retry time, and the job fails only once the
host has been away for BENCHLAB_UNREACHABLE_FAIL_AFTER_S. The virtual lab's version, a link cut
and restored, is test_network_loss.py."""

import html
import socket
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import LazySettings
from django.urls import reverse
from django.utils import timezone

from runs.baselines.services.execute import baseline_execute
from runs.bench.services.execute import run_execute
from runs.builds.services.execute import build_execute
from runs.jobs.dispatch import queue_dispatch_jobs
from runs.jobs.host_reach import FIRST_RETRY_S, LONGEST_RETRY_S, host_mark_unreachable
from runs.jobs.selectors import HostWait, baseline_wait, build_wait, run_wait
from runs.models import BaselineState, BuildState, Device, DeviceBaseline, Host, RunState
from runs.tests.builds.test_builds import make_build
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.keys import generate_key
from runs.tests.sent_tasks import record_sent_tasks

pytestmark = pytest.mark.django_db
LIMIT_S = 600.0


@pytest.fixture
def silent_host(tmp_path: Path, settings: LazySettings, monkeypatch: pytest.MonkeyPatch) -> Host:
    """A host whose SSH port refuses connections (nothing listens there); jobs sent to workers
    are only recorded."""
    settings.BENCHLAB_UNREACHABLE_FAIL_AFTER_S = LIMIT_S
    record_sent_tasks(monkeypatch)
    generate_key(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return make_host(
        name="lab9", address="127.0.0.1", ssh_port=port, private_key_path=str(tmp_path / "key"),
        allow_runs_on_benchlab_server=True,
    )  # fmt: skip


def away_past_the_limit(host: Host) -> None:
    """As if the host had not answered since longer ago than the limit, and its retry time came."""
    now = timezone.now()
    since, retry = now - timedelta(seconds=LIMIT_S + 1), now - timedelta(seconds=1)
    Host.objects.filter(pk=host.pk).update(unreachable_since=since, unreachable_retry_at=retry)


def check_waits_then_fails(host: Host, execute: Callable[[], str], job_state: Callable[[], tuple[str, object, str]],
                           waits: Callable[[], list[HostWait]], started: Callable[[], list[int]]) -> str:  # fmt: skip
    """The job goes back in line, is not sent again before its host's retry time, and fails once
    the host has been away too long; its error."""
    assert execute() == "queued"
    marked = Host.objects.get(pk=host.pk)
    assert job_state() == ("queued", None, "")
    assert marked.unreachable_since is not None and marked.unreachable_retry_at is not None
    refused = f"[Errno None] Unable to connect to port {host.ssh_port} on 127.0.0.1"  # as paramiko says it
    assert marked.unreachable_error == f"cannot connect to root@[127.0.0.1]:{host.ssh_port}: {refused}"
    assert FIRST_RETRY_S - 1 < (marked.unreachable_retry_at - timezone.now()).total_seconds() <= FIRST_RETRY_S
    assert (marked.claimed_by_id, marked.claimed_by_build_id, marked.claimed_by_baseline_id) == (None, None, None)
    assert [str(wait) for wait in waits()] == [f"lab9 is {marked.unreachable_note}"]
    assert started() == []  # left alone until its retry time

    away_past_the_limit(host)
    assert len(started()) == 1
    assert execute() == "failed"
    error = job_state()[2]
    since = timezone.localtime(Host.objects.get(pk=host.pk).unreachable_since).strftime("%Y-%m-%d %H:%M:%S")
    assert error.startswith(f"lab9 has been unreachable since {since}"), error
    assert f"(longer than BENCHLAB_UNREACHABLE_FAIL_AFTER_S = {LIMIT_S:g} s); last error: cannot connect" in error
    return error


def test_a_run_on_a_host_that_does_not_answer_goes_back_in_line_saying_why_and_fails_only_after_the_limit(
    silent_host: Host,
) -> None:
    run = make_run(silent_host, make_device(silent_host), make_pg_install(silent_host), state=RunState.QUEUED)
    assert queue_dispatch_jobs().runs == [run.pk]

    def state() -> tuple[str, object, str]:
        run.refresh_from_db()
        return run.state, run.started_at, run.error if run.state == RunState.FAILED else run.worker

    check_waits_then_fails(silent_host, lambda: run_execute(run_id=run.pk), state, lambda: run_wait(run),
                           lambda: queue_dispatch_jobs().runs)  # fmt: skip
    notes = list(run.transitions.values_list("state", "note"))
    assert notes[0][0] == RunState.QUEUED and notes[0][1].startswith("lab9 did not answer (cannot connect to root@")
    assert notes[-1] == (RunState.FAILED, "")


def test_a_build_on_a_host_that_does_not_answer_waits_the_same_way(silent_host: Host) -> None:
    build = make_build(silent_host)
    assert queue_dispatch_jobs().builds == [build.pk]

    def state() -> tuple[str, object, str]:
        build.refresh_from_db()
        return build.state, build.started_at, build.error if build.state == BuildState.FAILED else build.worker

    check_waits_then_fails(silent_host, lambda: build_execute(build_id=build.pk), state, lambda: build_wait(build),
                           lambda: queue_dispatch_jobs().builds)  # fmt: skip


def test_a_fio_baseline_on_a_host_that_does_not_answer_waits_the_same_way(silent_host: Host) -> None:
    device = make_device(silent_host, name="hdd", kind=Device.Kind.HDD, wipe_allowed=True)
    baseline = DeviceBaseline.objects.create(device=device, host=silent_host, size_bytes=2**26, runtime_s=2, ramp_s=0,
                                             jobs=["seq-read"], state=BaselineState.QUEUED)  # fmt: skip
    assert queue_dispatch_jobs().baselines == [baseline.pk]

    def state() -> tuple[str, object, str]:
        baseline.refresh_from_db()
        failed = baseline.state == BaselineState.FAILED
        return baseline.state, baseline.started_at, baseline.error if failed else baseline.worker

    check_waits_then_fails(silent_host, lambda: baseline_execute(baseline_id=baseline.pk), state,
                           lambda: baseline_wait(baseline), lambda: queue_dispatch_jobs().baselines)  # fmt: skip


def test_the_tries_back_off_up_to_two_minutes_and_end_at_the_limit(settings: LazySettings) -> None:
    settings.BENCHLAB_UNREACHABLE_FAIL_AFTER_S = LIMIT_S
    host = make_host()
    waits = []
    for away_s in (None, 40, 400, LIMIT_S - 10, LIMIT_S):
        if away_s is not None:
            Host.objects.filter(pk=host.pk).update(unreachable_since=timezone.now() - timedelta(seconds=away_s))
        away = host_mark_unreachable(host, "cannot connect to root@10.200.0.11: timed out")
        retry_at = Host.objects.values_list("unreachable_retry_at", flat=True).get(pk=host.pk)
        assert retry_at is not None
        waits.append((round((retry_at - timezone.now()).total_seconds()), away.overdue))

    assert waits == [(FIRST_RETRY_S, False), (40, False), (LONGEST_RETRY_S, False), (10, False), (0, True)]


def test_the_admin_shows_an_unreachable_host_with_since_when_and_the_last_error(client_for: ClientFactory) -> None:
    host = make_host()
    host_mark_unreachable(host, "cannot connect to root@10.200.0.11: Error reading SSH protocol banner")
    note = Host.objects.get(pk=host.pk).unreachable_note
    ada = client_for("ada")

    listing = ada.get(reverse("admin:runs_host_changelist")).content.decode()
    change = ada.get(reverse("admin:runs_host_change", args=[host.pk])).content.decode()

    assert note.startswith("unreachable since ") and "Error reading SSH protocol banner" in note
    assert html.escape(note) in listing
    assert "Error reading SSH protocol banner" in change and "Unreachable since" in change
