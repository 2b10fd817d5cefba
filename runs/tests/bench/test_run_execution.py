"""Runs end to end through a real Celery worker on the virtual lab."""

import time
from collections.abc import Iterator
from contextlib import closing
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Q
from django.test import Client
from django.urls import reverse
from knox.models import AuthToken
from rest_framework.test import APIClient

from runs.bench.services.runs import run_enqueue
from runs.jobs import live
from runs.jobs.cancel import job_cancel
from runs.lab.benchmark.run import RUNS_ROOT, WORK_SUBDIR
from runs.lab.host.run_user import RUN_USER
from runs.management.commands.lab_register import lab_host_name
from runs.models import AuditAction, AuditEvent, Host, PgInstall, Run, RunClientSample, RunState
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN, VirtualLab
from runs.tests.waits import wait_for_samples, wait_for_state, wait_until_finished
from runs.tests.workers import CeleryWorker

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def lab_inventory(virtual_lab: VirtualLab) -> Iterator[dict[str, Host]]:
    call_command("lab_register", "--id", str(virtual_lab.lab_id), stdout=StringIO())
    yield {name: Host.objects.get(name=lab_host_name(virtual_lab.lab_id, name)) for name in ("lab1", "lab2", "lab3")}


def new_run(host: Host, user: User, client_hosts: tuple[Host, ...] = (), **fields: object) -> Run:
    defaults: dict[str, object] = {
        "server_host": host,
        "device": fields.get("device") or host.devices.get(name="ram"),
        "pg_install": host.pg_installs.get(bin_dir=PG_BIN),
        "filesystem": "ext4",
        "mount_options": "noatime",
        "scale": 1,
        "clients": 2,
        "threads": 1,
        "duration_s": 4,
        "warmup_s": 2,
        "pg_settings": "shared_buffers = 32MB",
        "queued_by": user,
        # No settle pause (about a second a run on the idle RAM disk) where a test is not about it:
        # the run below that goes through every state keeps the default, as test_lab_state does.
        "settle_s": 0,
    }
    return run_enqueue(run=Run(**(defaults | fields)), client_host_ids=[client.pk for client in client_hosts])


def test_a_queued_run_goes_through_every_state_and_stores_its_results(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    # The inventory is wrong about the install's WAL block size: the run records what the server says.
    PgInstall.objects.filter(host=lab_inventory["lab1"], bin_dir=PG_BIN).update(wal_block_size=16384)
    run = wait_until_finished(new_run(lab_inventory["lab1"], make_user("otto", "operator"), settle_s=5))

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    states = list(run.transitions.values_list("state", flat=True))
    assert states == ["queued", "preparing_storage", "initializing_database", "warming_up", "measuring",
                      "collecting", "cleaning_up", "done"]  # fmt: skip
    samples = list(run.samples.order_by("second"))
    assert len(samples) >= 5
    assert [s.warmup for s in samples[:2]] == [True, True] and not samples[-1].warmup
    assert run.tps and run.tps > 0 and run.steady_tps_mean and run.steady_tps_mean > 0
    assert run.summary["duration_s"] == 6  # warm-up and measured time in one pgbench run
    stages = run.environment["stages"]  # where the run's time went
    assert {"storage", "cluster", "load", "pgbench with metrics", "collect", "cleanup"} <= set(stages)
    assert stages["pgbench with metrics"] >= 6 and stages["load"] > 0
    assert "noatime" in run.environment["filesystem"]["mount_options"].split(",")
    assert run.environment["postgresql"]["non_default_settings"]["shared_buffers"] == "4096"
    assert run.environment["host"]["hostname"] == "lab1"
    postgresql = run.environment["postgresql"]
    assert (postgresql["block_size"], postgresql["wal_block_size"], postgresql["page_sizes_from"]) == (
        8192,
        8192,
        "server",
    )
    assert run.metrics["cache_hit_ratio"] is not None and run.cache_hit_pct is not None
    checkpoints = run.environment["method"]["checkpoints"]  # none expected in 6 s; counted and looked for
    assert checkpoints["source"] == "pg_stat_bgwriter" and isinstance(checkpoints["timed"], int), checkpoints
    assert isinstance(checkpoints["requested"], int) and isinstance(checkpoints["events"], list), checkpoints
    assert run.os_means["vmstat"]["us"] is not None and run.os_series.filter(source="vmstat", column="us").exists()
    assert {a.name for a in run.artifacts.all()} >= {"pgbench.stdout.txt", "pgbench.stderr.txt"}
    assert Host.objects.get(pk=run.server_host_id).claimed_by_id is None
    # Every transaction was logged (sampling rate 1): percentiles over the measured window only.
    latency = run.metrics["latency"]
    assert 0 < latency["count"] < run.summary["transactions_processed"]
    percentiles = [latency["min_ms"], run.latency_p50_ms, run.latency_p95_ms, run.latency_p99_ms, latency["max_ms"]]
    assert 0 < percentiles[0] and percentiles == sorted(percentiles)
    events = live.events_after(live.run_stream(run.pk))
    assert [e.data["second"] for e in events if e.kind == "sample"] == [s.second for s in samples]
    assert [e.data["state"] for e in events if e.kind == "state"] == states
    # The audit log has who queued it and which device was formatted with which command.
    about_run = Q(object_type="run", object_id=str(run.pk)) | Q(object_type="device", object_id=str(run.device_id))
    audit = list(AuditEvent.objects.filter(about_run).order_by("id"))
    assert [(e.action, e.actor_name) for e in audit] == [
        (AuditAction.RUN_QUEUED, "otto"),
        (AuditAction.DEVICE_FORMATTED, "otto"),
    ]
    assert audit[1].message.startswith(f"run {run.pk} on {run.server_host.name}: mkfs.ext4 -F -q /dev/loop")


def test_pgbench_runs_on_a_named_client_host_over_tcp(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab
) -> None:
    server, client = lab_inventory["lab1"], lab_inventory["lab2"]
    run = new_run(server, make_user("otto", "operator"), client_hosts=(client,), duration_s=6, log_sampling_rate=0.5)
    wait_for_state(run, RunState.MEASURING)
    run_dir = f"{RUNS_ROOT}/{run.run_key}"
    pid_file = f"{run_dir}/{WORK_SUBDIR}/pgbench.pid"
    with closing(virtual_lab.connect("lab2")) as on_client, closing(virtual_lab.connect("lab1")) as on_server:
        client_pid = on_client.run(["cat", pid_file]).stdout.strip()
        client_pgbench_alive = on_client.run(["kill", "-0", client_pid], check=False).exit_status == 0
        client_pgbench_user = on_client.run(["ps", "-o", "user=", "--ppid", client_pid]).stdout.strip()
        server_pgbench = on_server.run(["test", "-e", pid_file], check=False).exit_status == 0
        # While it runs, both hosts are claimed: no other run may start on either.
        claims = set(Host.objects.filter(pk__in=[server.pk, client.pk]).values_list("claimed_by", flat=True))

    run = wait_until_finished(run)

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    assert client_pgbench_alive and not server_pgbench
    assert client_pgbench_user == RUN_USER
    assert claims == {run.pk}
    assert f"-h {server.address} -p " in run.environment["pgbench"]["command"]
    assert run.environment["pgbench"]["host"] == client.name
    assert run.environment["client"]["hostname"] == "lab2" and run.environment["host"]["hostname"] == "lab1"
    assert run.samples.filter(warmup=False).count() >= 4 and run.tps and run.tps > 0
    assert "--sampling-rate=0.5" in run.environment["pgbench"]["command"]
    # About half of the measured transactions are in the sampled log.
    assert 0.2 < run.metrics["latency"]["count"] / run.summary["transactions_processed"] < 0.6
    assert set(Host.objects.filter(pk__in=[server.pk, client.pk]).values_list("claimed_by", flat=True)) == {None}
    with closing(virtual_lab.connect("lab2")) as on_client:
        assert on_client.run(["test", "-e", run_dir], check=False).exit_status == 1, "run directory left on the client"


def test_a_mount_the_kernel_rejects_fails_the_run_with_the_kernels_reason(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    otto = make_user("otto", "operator")
    run = new_run(lab_inventory["lab2"], otto, filesystem="xfs", mount_options="nobarrier")

    run = wait_until_finished(run)
    browser = Client()
    browser.force_login(otto)
    page = browser.get(reverse("run-detail", args=[run.pk])).content.decode()

    assert run.state == RunState.FAILED
    assert run.failed_step == RunState.PREPARING_STORAGE
    assert run.failed_command.startswith("mount -t xfs -o nobarrier")
    assert run.failed_exit_status == 32
    assert "xfs: Unknown parameter 'nobarrier'" in run.failed_output
    # The page says where it failed and why, in the kernel's words.
    assert "Failed while preparing storage" in page and "exit status 32" in page
    assert "xfs: Unknown parameter &#x27;nobarrier&#x27;" in page
    # The live log is kept for it (it stored no pgbench output): the steps and what they wrote.
    log = run.artifacts.get(name="log.txt").content
    assert "== preparing storage ==" in log and "$ mkfs.xfs" in log and "== failed: " in log, log
    assert "the live log, as the run ended" in page


def test_cancel_stops_a_running_run_and_frees_its_host(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    otto = make_user("otto", "operator")
    run = new_run(lab_inventory["lab2"], otto, duration_s=120, warmup_s=0)
    wait_for_state(run, RunState.MEASURING)
    wait_for_samples(run, 2)  # not a fixed sleep: on a loaded machine the first second's line came late

    job_cancel(run, by=otto)
    run = wait_until_finished(run, timeout=90)

    assert run.state == RunState.CANCELLED
    assert Host.objects.get(pk=run.server_host_id).claimed_by_id is None
    assert run.finished_at is not None and run.started_at is not None
    assert (run.finished_at - run.started_at).total_seconds() < 90
    # What was measured before the cancel is kept: samples, raw outputs, the environment.
    assert run.samples.count() >= 2
    assert run.artifacts.filter(name="pgbench.stderr.txt").exists()
    assert run.environment["host"]["hostname"] == "lab2"


def test_the_api_queues_a_run_and_reads_its_samples(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    host = lab_inventory["lab2"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(make_user('otto', 'operator'))[1]}")
    body = {"server_host": host.pk, "device": host.devices.get(name="ram").pk, "filesystem": "ext4",
            "pg_install": host.pg_installs.get(bin_dir=PG_BIN).pk, "scale": 1, "clients": 1, "threads": 1,
            "duration_s": 3, "warmup_s": 0, "workload": "select-only", "query_mode": "prepared"}  # fmt: skip

    created = client.post("/api/runs/", body, format="json")
    run = wait_until_finished(Run.objects.get(pk=created.json()["id"]))
    samples = client.get(f"/api/runs/{run.pk}/samples/").json()

    assert created.status_code == 201 and run.state == RunState.DONE, (run.error, run.failed_output)
    assert len(samples) >= 2 and all(s["tps"] > 0 for s in samples)
    assert client.get(f"/api/runs/{run.pk}/").json()["steady_tps_mean"] > 0


def test_two_client_hosts_run_together_and_the_run_keeps_each_ones_results_and_their_total(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    server, lab2, lab3 = lab_inventory["lab1"], lab_inventory["lab2"], lab_inventory["lab3"]
    run = new_run(server, make_user("otto", "operator"), client_hosts=(lab2, lab3), duration_s=4, warmup_s=1)
    wait_for_state(run, RunState.MEASURING)
    # Every host of the run is claimed while it measures.
    claims = set(Host.objects.filter(pk__in=[server.pk, lab2.pk, lab3.pk]).values_list("claimed_by", flat=True))

    run = wait_until_finished(run)

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    assert claims == {run.pk}
    clients = list(run.run_clients.select_related("host").order_by("position"))
    assert [(c.host.name, c.database) for c in clients] == [(lab2.name, "bench_1"), (lab3.name, "bench_2")]
    assert all(c.tps and c.tps > 0 and c.exit_status == 0 and c.rtt_ms and c.started_epoch for c in clients)
    assert all(c.latency_p50_ms and c.steady_tps_mean for c in clients)
    assert run.tps == pytest.approx(sum(c.tps or 0 for c in clients))
    assert run.start_skew_ms is not None and run.start_skew_ms < 500
    # Per second: each client's samples, and the run's, which are their sum.
    for client in clients:
        assert client.samples.count() >= 4
    lab2_tps = dict(clients[0].samples.values_list("second", "tps"))
    lab3_tps = dict(clients[1].samples.values_list("second", "tps"))
    for sample in run.samples.all():
        assert sample.tps == pytest.approx(lab2_tps[sample.second] + lab3_tps[sample.second])
    assert [c["hostname"] for c in run.environment["clients"]] == ["lab2", "lab3"]
    assert {a.name for a in run.artifacts.all()} >= {
        f"pgbench.{lab2.name}.stdout.txt",
        f"pgbench.{lab3.name}.stdout.txt",
    }
    events = live.events_after(live.run_stream(run.pk))
    assert {e.data["client"] for e in events if e.kind == "client_sample"} == {lab2.name, lab3.name}
    assert set(Host.objects.filter(pk__in=[server.pk, lab2.pk, lab3.pk]).values_list("claimed_by", flat=True)) == {None}


def test_cancelling_a_two_client_run_stops_pgbench_on_both_clients(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab
) -> None:
    server, lab2, lab3 = lab_inventory["lab1"], lab_inventory["lab2"], lab_inventory["lab3"]
    otto = make_user("otto", "operator")
    run = new_run(server, otto, client_hosts=(lab2, lab3), duration_s=120, warmup_s=0)
    wait_for_state(run, RunState.MEASURING)
    deadline = time.monotonic() + 60
    while RunClientSample.objects.filter(run_client__run=run).values("run_client").distinct().count() < 2:
        assert time.monotonic() < deadline, "the clients never reported a second"
        time.sleep(0.2)
    pid_file = f"{RUNS_ROOT}/{run.run_key}/{WORK_SUBDIR}/pgbench.pid"
    pids = {}
    for name in ("lab2", "lab3"):
        with closing(virtual_lab.connect(name)) as client:
            pids[name] = client.run(["cat", pid_file]).stdout.strip()

    job_cancel(run, by=otto)
    run = wait_until_finished(run, timeout=90)

    assert run.state == RunState.CANCELLED
    assert run.finished_at is not None and run.started_at is not None
    assert (run.finished_at - run.started_at).total_seconds() < 90
    for name, pid in pids.items():  # each client's pgbench (by its PID) is gone
        with closing(virtual_lab.connect(name)) as client:
            assert client.run(["kill", "-0", pid], check=False).exit_status != 0, f"pgbench still runs on {name}"
    hosts = Host.objects.filter(pk__in=[server.pk, lab2.pk, lab3.pk])
    assert set(hosts.values_list("claimed_by", flat=True)) == {None}
    # What each client measured before the cancel is kept.
    assert all(c.samples.count() >= 1 and c.exit_status is not None for c in run.run_clients.all())
