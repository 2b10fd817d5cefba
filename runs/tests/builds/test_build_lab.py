"""PostgreSQL builds end to end: queued like a run, built by a real Celery worker on the virtual
lab, registered in the inventory, and used by a run; and a build cancelled a few seconds in.

lab1 has no network: its Debian source comes from this machine's cache (scripts/fetch-pg-source),
the newest cached postgresql-15, installed or not, checked against its .dsc's SHA-256
(test_pg_build_lab.real_build_source). The build takes about five minutes the
first time; lab1's BUILDS_ROOT is kept between sessions (test_pg_build_lab's `lab1` fixture
bind-mounts a directory of this machine there), so a later session finds the same build by its
key, verifies it and registers it without compiling.
"""

import time

import pytest
from django.test import Client
from django.urls import reverse

from runs.bench.services.runs import run_enqueue
from runs.builds.services.builds import build_queue
from runs.jobs.cancel import job_cancel
from runs.lab.pgbuild.options import BuildOptions
from runs.lab.transport.ssh import SSHTransport
from runs.models import BuildState, Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory
from runs.tests.builds.test_pg_build_lab import assert_nothing_left, lab1, real_build_source
from runs.tests.factories import make_user
from runs.tests.waits import refreshed_until, wait_until_finished
from runs.tests.workers import CeleryWorker

__all__ = ["lab1", "lab_inventory"]  # fixtures, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
FIRST_BUILD_S = 1500  # a first compile on a slow machine; a cached one takes seconds


def test_a_4k_build_is_built_by_a_worker_registered_and_used_by_a_run(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], lab1: SSHTransport
) -> None:
    host = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    version, source, _ = real_build_source()
    options = BuildOptions(version=version, source=source, block_size_kb=4)

    build, queued = build_queue(host=host, options=options, by=otto)
    build = refreshed_until(build, lambda b: b.is_finished, FIRST_BUILD_S, "finished", interval=0.5)
    print(f"\nbuild {build.pk}: {build.state}, reused={build.reused}, from {build.started_at} to {build.finished_at}")

    assert queued and build.state == BuildState.DONE, (build.error, build.failed_step, build.failed_output)
    install = build.pg_install
    assert install is not None and install.bin_dir == f"{build.prefix}/bin"
    assert (install.block_size, install.wal_block_size, install.version) == (4096, 8192, version)
    assert (build.built_block_size, build.built_segment_size) == (4096, 2**30)
    assert install.label == f"PostgreSQL {version}, 4 kB pages, 8 kB WAL blocks (benchlab build)"
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None
    if not build.reused:  # the first session on this machine compiles; later ones find its build
        # Each step is [name, started, ended] (PgBuild.steps).
        assert [step[0] for step in build.steps] == ["source", "configure", "make", "install", "verify"]
        # The log keeps its last lines: make's (its start has scrolled out of a whole compile's).
        assert "make[1]: Leaving directory" in build.log and build.log.endswith("== verification ==")
    # Asked again: the same build, nothing queued.
    again, queued_again = build_queue(host=host, options=options, by=otto)
    assert not queued_again and again.pk == build.pk

    page = Client()
    page.force_login(make_user("vera", "viewer"))
    shown = page.get(reverse("build-detail", args=[build.pk])).content.decode()
    assert "Registered install" in shown and f"<code>{install.bin_dir}</code>" in shown
    assert '<td id="built-block-size">4 kB</td>' in shown

    # A run with it: the server it starts reports 4 kB pages.
    spec = {"device": host.devices.get(name="ram"), "filesystem": "ext4", "scale": 1, "clients": 2, "threads": 1}
    run = run_enqueue(run=Run(server_host=host, pg_install=install, duration_s=3, warmup_s=0, queued_by=otto, **spec))
    run = wait_until_finished(run, timeout=180)
    assert run.state == RunState.DONE, (run.error, run.failed_output)
    postgresql = run.environment["postgresql"]
    assert (postgresql["block_size"], postgresql["page_sizes_from"], postgresql["bin_dir"]) == (
        4096,
        "server",
        install.bin_dir,
    )
    assert run.tps and run.tps > 0


def test_a_build_cancelled_a_few_seconds_in_ends_cancelled_with_its_host_free_and_nothing_left(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], lab1: SSHTransport
) -> None:
    host = lab_inventory["lab1"]
    otto = make_user("otto", "operator")
    version, source, _ = real_build_source()
    # Sizes no other test builds: never found ready on the host, so it really compiles.
    options = BuildOptions(version=version, source=source, block_size_kb=16, wal_block_size_kb=32)

    build, _ = build_queue(host=host, options=options, by=otto)
    build = refreshed_until(build, lambda b: b.step in ("configure", "make"), 300, "configuring", interval=0.5)
    time.sleep(3)
    cancelled_at = time.monotonic()
    job_cancel(build, by=otto)
    build = refreshed_until(build, lambda b: b.is_finished, 120, "finished", interval=0.5)

    assert build.state == BuildState.CANCELLED, (build.error, build.failed_output)
    assert time.monotonic() - cancelled_at < 60
    assert build.pg_install is None and not build.reused
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None
    assert_nothing_left(lab1, options, build.job_name)
