"""PostgreSQL builds (issue 14, points 1-3) with the lab boundary faked: what is refused and
with which words, the cache, the shared queue with runs, cancel, what a failed and a finished
build leave in the inventory, removal, the sweeper, the pages and the API, and who may do what.

The build itself on a real host is test_build_lab.py; the pages in a browser test_browser_builds.py.
"""

import dataclasses
import re
from collections.abc import Callable
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from knox.models import AuthToken
from pytest_django.fixtures import DjangoCaptureOnCommitCallbacks
from rest_framework.test import APIClient

from runs.builds.services import execute as build_execute
from runs.builds.services import remove as build_remove
from runs.builds.services import sweeper as build_sweeper
from runs.builds.services.builds import BuildRefused, build_fields, build_queue
from runs.builds.services.execute import build_execute as execute
from runs.builds.services.remove import BuildRemoveFailed
from runs.inventory.services import connect as inventory_connect
from runs.jobs import live
from runs.jobs.cancel import JobRefused, job_cancel
from runs.jobs.dispatch import queue_dispatch, queue_dispatch_jobs, release_hosts
from runs.jobs.heartbeat import stale_after_s
from runs.jobs.kinds import BUILD, KINDS
from runs.jobs.selectors import run_wait
from runs.jobs.sweeper import release_orphans, resend_claimed_jobs, stale_jobs, sweep_stale, take_over
from runs.lab.errors import LabError
from runs.lab.pgbuild.build import BuildFailed, BuildStep, BuiltInstall
from runs.lab.pgbuild.options import BuildOptions, BuildSource, SourceKind, build_key, build_prefix
from runs.models import AuditAction, AuditEvent, BuildState, Host, PgBuild, PgInstall, Run, RunState
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.fake_sources import DEBIAN_15_18, DEBIAN_15_20, TARBALL_15_20, FakeHostSources
from runs.tests.sent_tasks import record_sent_tasks

pytestmark = pytest.mark.django_db
DEBIAN_VERSION = "15.20-0+deb12u1"


def debian_options(**changes: Any) -> BuildOptions:
    source = BuildSource(SourceKind.DEBIAN, package="postgresql-15", package_version=DEBIAN_VERSION)
    return dataclasses.replace(BuildOptions(version="15.20", source=source, block_size_kb=4), **changes)


def make_build(host: Host, options: BuildOptions | None = None, **fields: Any) -> PgBuild:
    """A build as the database holds it (no worker involved)."""
    options = options or debian_options()
    return PgBuild.objects.create(
        host=host, key=build_key(options), prefix=build_prefix(options), **(build_fields(options) | fields)
    )


def form_fields(host: Host, **changes: object) -> dict[str, object]:
    """The page's form (and the API's body) for a 4 kB build on `host` from the Debian source of
    DEBIAN_VERSION, which the host has (conftest's fake_sources)."""
    fields: dict[str, object] = {"host": host.pk, "source": DEBIAN_15_20.key, "block_size_kb": 4,
                                 "wal_block_size_kb": 8, "segment_size_gb": 1}  # fmt: skip
    return fields | changes


def api_client(user: User) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user)[1]}")
    return client


class FakeTransport:
    """What the lab layer would be handed; the fakes below never use it."""

    label = "fake"

    def __init__(self, host: Host) -> None:
        self.host, self.closed = host, False

    def close(self) -> None:
        self.closed = True


def built(options: BuildOptions, reused: bool = False) -> BuiltInstall:
    prefix = build_prefix(options)
    return BuiltInstall(prefix=prefix, bin_dir=f"{prefix}/bin", version="15.20", block_size=4096,
                        wal_block_size=8192, segment_size=1024**3, pgbench_version="pgbench (PostgreSQL) 15.20",
                        source_sha256="ab" * 32, reused=reused)  # fmt: skip


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The lab boundary faked: connections, the build, its removal and its cleanup; and no task
    leaves this process (the dispatcher's sends are recorded)."""
    fake = SimpleNamespace(build=None, removed=[], cleaned=[], sent_builds=[], sent_runs=[], unreachable=False)

    def connect(host: Host, **options: object) -> FakeTransport:
        if fake.unreachable:
            raise LabError(f"{host.name}: no route to host")
        return FakeTransport(host)

    def build_postgres(transport: FakeTransport, connect: Callable[[], Any], options: BuildOptions, observer: Any,
                       *, job_name: str) -> BuiltInstall:  # fmt: skip
        assert fake.build is not None, "the test did not say what the build does"
        return fake.build(options, observer, job_name)

    def remove(transport: FakeTransport, prefix: str) -> None:
        fake.removed.append((transport.host.name, prefix))

    monkeypatch.setattr(build_execute, "host_connect_for_run", connect)
    monkeypatch.setattr(build_execute, "host_connect", connect)
    monkeypatch.setattr(build_execute, "build_postgres", build_postgres)
    monkeypatch.setattr(inventory_connect, "host_connect", connect)  # host_connected: remove, sweeper
    monkeypatch.setattr(build_remove, "remove_build", remove)
    monkeypatch.setattr(build_sweeper, "clean_build_leftovers", lambda t, job: fake.cleaned.append(job))
    sent = record_sent_tasks(monkeypatch)
    fake.sent_builds, fake.sent_runs = sent["runs.execute_build"], sent["runs.execute_run"]
    return fake


def started(build: PgBuild) -> PgBuild:
    """The dispatcher gives the build its host (as it does when the build's turn comes)."""
    assert queue_dispatch_jobs().builds == [build.pk]
    return PgBuild.objects.get(pk=build.pk)


def events(build: PgBuild) -> list[tuple[str, dict[str, Any]]]:
    return [(event.kind, event.data) for event in live.events_after(live.job_stream(BUILD, build.pk))]


# ---- queueing: validation, the host's refusals, the cache ----


def test_bad_options_are_refused_field_by_field_and_nothing_is_created() -> None:
    host, otto = make_host(), make_user("otto", "operator")
    source = BuildSource(SourceKind.TARBALL, tarball_path="/srv/src/pg.zip", sha256="1234")
    bad = BuildOptions(version="15.20", source=source, block_size_kb=3, configure_flags=("--with-llvm",))

    with pytest.raises(ValidationError) as refused:
        build_queue(host=host, options=bad, by=otto)

    errors = refused.value.message_dict
    assert set(errors) == {"tarball_path", "sha256", "block_size_kb", "configure_flags"}
    assert errors["block_size_kb"] == ["block size 3 kB: PostgreSQL accepts 1, 2, 4, 8, 16 or 32 kB"]
    assert "--enable-debug" in errors["configure_flags"][0] and "--with-llvm" in errors["configure_flags"][0]
    assert "64 hexadecimal digits" in errors["sha256"][0]
    assert not PgBuild.objects.exists() and not AuditEvent.objects.exists()


def test_the_service_takes_tarballs_only_from_the_configured_directory() -> None:
    source = BuildSource(SourceKind.TARBALL, tarball_path="postgresql-15.20.tar.bz2", tarball_dir="/srv/elsewhere")

    with pytest.raises(ValidationError) as refused:
        build_queue(host=make_host(), options=BuildOptions(version="15.20", source=source), by=make_user("otto"))

    assert refused.value.message_dict == {
        "tarball_path": [f"tarball: builds take tarballs only from {settings.PG_TARBALL_DIR}"]
    }
    assert not PgBuild.objects.exists() and not AuditEvent.objects.exists()


def test_a_disabled_host_or_benchlabs_own_server_takes_no_build() -> None:
    otto = make_user("otto", "operator")
    disabled = make_host(name="lab1", enabled=False)
    own = make_host(name="this-machine", transport=Host.Transport.LOCAL, address="", private_key_path="")

    with pytest.raises(ValidationError) as off:
        build_queue(host=disabled, options=debian_options(), by=otto)
    with pytest.raises(ValidationError) as server:
        build_queue(host=own, options=debian_options(), by=otto)

    assert off.value.message_dict == {
        "host": ["lab1 is disabled in the inventory: it takes no new builds (an admin enables it)."]
    }
    assert "this-machine is benchlab's own server" in server.value.message_dict["host"][0]
    assert not PgBuild.objects.exists()


def test_the_same_build_asked_again_is_the_one_queued_building_or_done() -> None:
    host, otto = make_host(), make_user("otto", "operator")

    first, queued = build_queue(host=host, options=debian_options(), by=otto)
    again, queued_again = build_queue(host=host, options=debian_options(), by=otto)
    PgBuild.objects.filter(pk=first.pk).update(state=BuildState.DONE)
    done_again, _ = build_queue(host=host, options=debian_options(), by=otto)
    other, other_queued = build_queue(host=host, options=debian_options(block_size_kb=16), by=otto)

    assert queued and not queued_again and again.pk == first.pk == done_again.pk
    assert other_queued and other.pk != first.pk
    assert PgBuild.objects.count() == 2
    audit = AuditEvent.objects.filter(object_type="pgbuild", action=AuditAction.INVENTORY_ADDED)
    assert audit.count() == 2 and "PostgreSQL 15.20, 4 kB pages" in audit.last().message  # type: ignore[union-attr]


def test_a_failed_or_removed_build_is_no_cache_hit() -> None:
    host, otto = make_host(), make_user("otto", "operator")
    failed = make_build(host, state=BuildState.FAILED)
    removed = make_build(host, state=BuildState.REMOVED)

    build, queued = build_queue(host=host, options=debian_options(), by=otto)

    assert queued and build.pk not in (failed.pk, removed.pk) and build.key == failed.key


# ---- one line per host, shared with runs ----


def test_builds_and_runs_on_one_host_start_in_the_order_they_were_queued(lab: SimpleNamespace) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    first_run = make_run(host, device, pg, state=RunState.QUEUED)
    build = make_build(host)
    second_run = make_run(host, device, pg, state=RunState.QUEUED)

    assert queue_dispatch_jobs().runs == [first_run.pk]
    assert queue_dispatch_jobs().builds == []  # the host is busy; the build is next in line
    assert [str(wait) for wait in run_wait(second_run)] == [f"lab1 busy with run {first_run.pk}; 1 ahead of it"]
    release_hosts(first_run)
    Run.objects.filter(pk=first_run.pk).update(state=RunState.DONE)

    dispatched = queue_dispatch_jobs()
    assert dispatched.builds == [build.pk] and dispatched.runs == []
    assert Host.objects.get(pk=host.pk).claimed_by_build_id == build.pk
    assert [str(wait) for wait in run_wait(second_run)] == [f"lab1 busy with build {build.pk}"]
    assert queue_dispatch() == []  # a host with a build takes no run

    Host.objects.filter(pk=host.pk).update(claimed_by_build=None)
    PgBuild.objects.filter(pk=build.pk).update(state=BuildState.DONE)
    assert queue_dispatch() == [second_run.pk]


def test_a_queued_build_says_what_it_waits_for_and_its_page_links_the_job_ahead(client_for: ClientFactory) -> None:
    host = make_host()
    running = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    queue_dispatch()
    build = make_build(host)

    page = client_for("vera").get(reverse("build-detail", args=[build.pk])).content.decode()

    assert f'busy with <a href="/runs/{running.pk}/">run {running.pk}</a>; next in line' in page


# ---- cancel ----


def test_a_queued_build_cancelled_leaves_the_queue_and_frees_its_host_for_the_next(lab: SimpleNamespace) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    build = make_build(host, queued_by=otto)
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    started(build)

    job_cancel(build, by=otto)

    build.refresh_from_db()
    assert build.state == BuildState.CANCELLED and build.finished_at is not None
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None
    assert queue_dispatch() == [run.pk]
    assert AuditEvent.objects.filter(object_id=str(build.pk), message="build cancelled while queued").exists()


def test_only_the_operator_who_queued_a_build_or_an_admin_may_cancel_it() -> None:
    host = make_host()
    otto, olga, ada = make_user("otto", "operator"), make_user("olga", "operator"), make_user("ada", "admin")
    build = make_build(host, queued_by=otto)

    with pytest.raises(JobRefused, match=r"Only otto, who queued this build, or an admin can cancel it\."):
        job_cancel(build, by=olga)
    job_cancel(build, by=ada)

    assert PgBuild.objects.get(pk=build.pk).state == BuildState.CANCELLED


def test_a_cancel_while_building_stops_it_at_its_next_step_and_registers_nothing(lab: SimpleNamespace) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    build = started(make_build(host, queued_by=otto))

    def cancelled_during_make(options: BuildOptions, observer: Any, job_name: str) -> BuiltInstall:
        observer.step(BuildStep.SOURCE)
        observer.step(BuildStep.CONFIGURE)
        job_cancel(PgBuild.objects.get(pk=build.pk), by=otto)
        observer.step(BuildStep.MAKE)  # raises: the build does not go on
        raise AssertionError("the build went on after its cancel")

    lab.build = cancelled_during_make

    assert execute(build_id=build.pk) == BuildState.CANCELLED
    build.refresh_from_db()
    assert build.step == "configure" and build.cancel_requested
    assert not PgInstall.objects.exists() and Host.objects.get(pk=host.pk).claimed_by_build_id is None


# ---- execution: what a failed and a finished build leave ----


def test_a_failed_build_keeps_its_step_command_exit_status_and_output_and_registers_no_install(
    lab: SimpleNamespace,
) -> None:
    host = make_host()
    build = started(make_build(host))
    output = "checking for readline... no\nconfigure: error: readline library not found"

    def fails_in_configure(options: BuildOptions, observer: Any, job_name: str) -> BuiltInstall:
        observer.step(BuildStep.SOURCE)
        observer.line("dpkg-source: info: extracting postgresql-15")
        observer.step(BuildStep.CONFIGURE)
        observer.line("checking for readline... no")
        raise BuildFailed(BuildStep.CONFIGURE, "configure failed: readline library not found",
                          command="./configure --prefix=/var/lib/benchlab/builds/pg-15.20 --with-blocksize=4",
                          exit_status=1, output=output)  # fmt: skip

    lab.build = fails_in_configure

    assert execute(build_id=build.pk) == BuildState.FAILED
    build.refresh_from_db()
    assert build.failed_step == "configure" and build.failed_exit_status == 1
    assert build.failed_command.startswith("./configure --prefix=")
    assert build.failed_output == output and build.error == "configure failed: readline library not found"
    assert "== configure ==" in build.log and "checking for readline... no" in build.log
    assert [step for step, *_ in build.steps] == ["source", "configure"]
    (_, source_start, source_end), (_, configure_start, configure_end) = build.steps  # each with its end
    assert source_start <= source_end == configure_start <= configure_end
    assert build.finished_at is not None and configure_end <= build.finished_at.isoformat()
    assert not PgInstall.objects.exists() and build.pg_install is None
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None
    assert [data["step"] for kind, data in events(build) if kind == "step"] == ["source", "configure"]


def test_a_build_that_cannot_connect_fails_before_its_first_step() -> None:
    host = make_host(private_key_path="", private_key_encrypted="gAAAA-not-a-token")  # its key does not decrypt
    build = make_build(host)
    Host.objects.filter(pk=host.pk).update(claimed_by_build=build)

    assert execute(build_id=build.pk) == BuildState.FAILED
    build.refresh_from_db()
    assert build.failed_step == "" and build.error and not PgInstall.objects.exists()
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None


def test_a_finished_build_registers_exactly_one_install_with_the_verified_sizes(lab: SimpleNamespace) -> None:
    host = make_host()
    build = started(make_build(host))
    seen: dict[str, Any] = {}

    def builds(options: BuildOptions, observer: Any, job_name: str) -> BuiltInstall:
        seen["job_name"] = job_name
        for step in BuildStep:
            observer.step(step)
            if step == BuildStep.MAKE:
                for percent in (10.0, 55.5, 100.0):
                    observer.progress(percent)
        return built(options)

    lab.build = builds

    assert execute(build_id=build.pk) == BuildState.DONE
    build.refresh_from_db()
    install = PgInstall.objects.get()
    assert build.pg_install == install and not build.reused
    assert (install.host, install.bin_dir) == (host, f"{build.prefix}/bin")
    assert (install.version, install.block_size, install.wal_block_size) == ("15.20", 4096, 8192)
    assert install.label == "PostgreSQL 15.20, 4 kB pages, 8 kB WAL blocks (benchlab build)"
    assert (build.built_block_size, build.built_wal_block_size, build.built_segment_size) == (4096, 8192, 1024**3)
    assert build.source_sha256 == "ab" * 32 and build.finished_at is not None
    assert seen["job_name"] == build.job_name and seen["job_name"].startswith(f"build-{build.pk}-")
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None
    kinds = [kind for kind, _ in events(build)]
    assert kinds.count("step") == 5 and "progress" in kinds
    progress = [data for kind, data in events(build) if kind == "progress"]
    assert progress[-1]["percent"] == 100.0 and progress[-1]["step"] == "make"
    assert AuditEvent.objects.filter(object_type="pginstall", message=f"build {build.pk}: built and verified").exists()


def test_a_build_the_host_already_had_is_registered_as_reused(lab: SimpleNamespace) -> None:
    host = make_host()
    build = started(make_build(host))
    lab.build = lambda options, observer, job_name: built(options, reused=True)

    assert execute(build_id=build.pk) == BuildState.DONE
    build.refresh_from_db()
    assert build.reused and build.steps == [] and PgInstall.objects.get().build == build


def test_a_build_not_holding_its_host_waits_and_a_second_delivery_leaves_a_live_one_alone(
    lab: SimpleNamespace,
) -> None:
    host = make_host()
    waiting = make_build(host)
    running = make_build(host, options=debian_options(block_size_kb=16), state=BuildState.BUILDING,
                         started_at=timezone.now(), heartbeat_at=timezone.now())  # fmt: skip

    assert execute(build_id=waiting.pk) == "waiting"
    assert execute(build_id=running.pk) == "running"
    assert PgBuild.objects.get(pk=running.pk).state == BuildState.BUILDING


# ---- the sweeper ----


def test_a_build_whose_worker_died_is_cleaned_up_on_its_host_failed_and_its_host_freed(lab: SimpleNamespace) -> None:
    host = make_host()
    silent = timezone.now() - timedelta(seconds=stale_after_s() + 5)
    build = make_build(host, state=BuildState.BUILDING, step="make", started_at=silent, heartbeat_at=silent)
    Host.objects.filter(pk=host.pk).update(claimed_by_build=build)
    queued_run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)

    assert execute(build_id=build.pk) == "abandoned"
    assert sweep_stale(build_sweeper.BUILD_RECOVERY) == [build.pk]
    assert sweep_stale(build_sweeper.BUILD_RECOVERY) == []

    build.refresh_from_db()
    assert build.state == BuildState.FAILED and build.failed_step == "make"
    assert build.error.startswith("the worker building it stopped while at make (no sign of life since ")
    assert build.error.endswith(f"what it left on {host.name} was removed")
    assert lab.cleaned == [build.job_name]
    assert Host.objects.get(pk=host.pk).claimed_by_id == queued_run.pk  # the host went to the next in line


def test_the_sweeper_says_when_a_dead_builds_host_could_not_be_cleaned_up(lab: SimpleNamespace) -> None:
    host = make_host()
    silent = timezone.now() - timedelta(seconds=stale_after_s() + 5)
    build = make_build(host, state=BuildState.BUILDING, step="configure", started_at=silent, heartbeat_at=silent)
    Host.objects.filter(pk=host.pk).update(claimed_by_build=build)
    lab.unreachable = True

    assert build_sweeper.sweep_build(build.pk)

    build.refresh_from_db()
    assert build.state == BuildState.FAILED
    assert "its work directory on lab1 could not be cleaned up (lab1: no route to host)" in build.error
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None


def test_a_host_held_by_an_ended_build_whose_process_died_is_freed() -> None:
    host = make_host()
    long_ago = timezone.now() - timedelta(seconds=stale_after_s() + 5)
    build = make_build(host, state=BuildState.DONE, heartbeat_at=long_ago)
    Host.objects.filter(pk=host.pk).update(claimed_by_build=build)

    assert release_orphans(KINDS[BUILD]) == 1
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None


def test_a_build_its_worker_moved_since_the_sweeper_read_it_is_left_to_that_worker(lab: SimpleNamespace) -> None:
    host = make_host()
    silent = timezone.now() - timedelta(seconds=stale_after_s() + 5)
    build = make_build(host, state=BuildState.BUILDING, step="make", started_at=silent, heartbeat_at=silent)
    [read] = stale_jobs(build_sweeper.BUILD_RECOVERY)
    PgBuild.objects.filter(pk=build.pk).update(heartbeat_at=timezone.now())  # its worker beats again

    assert not take_over(build_sweeper.BUILD_RECOVERY, read)
    assert PgBuild.objects.get(pk=build.pk).state == BuildState.BUILDING and lab.cleaned == []


def test_a_build_holding_its_host_whose_task_was_lost_is_sent_again(
    lab: SimpleNamespace, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    host = make_host()
    build = make_build(host)
    Host.objects.filter(pk=host.pk).update(claimed_by_build=build)
    make_build(host, options=debian_options(block_size_kb=8))  # holds no host: waits for the dispatcher

    with django_capture_on_commit_callbacks(execute=True):
        assert resend_claimed_jobs() == {"run": [], "build": [build.pk], "baseline": []}
    assert lab.sent_builds == [build.pk]


# ---- remove ----


def done_build(host: Host, **fields: Any) -> PgBuild:
    options = debian_options()
    install = make_pg_install(host, bin_dir=f"{build_prefix(options)}/bin", block_size=4096, label="4 kB build")
    return make_build(host, options, state=BuildState.DONE, pg_install=install, **fields)


def install_of(build: PgBuild) -> PgInstall:
    assert build.pg_install is not None
    return build.pg_install


def test_removing_a_build_no_run_used_removes_its_prefix_and_deletes_its_install(lab: SimpleNamespace) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    build = done_build(host, queued_by=otto)

    said = build_remove.build_remove(build=build, by=otto)

    build.refresh_from_db()
    assert lab.removed == [("lab1", build.prefix)]
    assert build.state == BuildState.REMOVED and build.removed_at is not None and build.pg_install is None
    assert not PgInstall.objects.exists()
    assert said.endswith("its install is deleted from the inventory (no run used it).")
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None
    assert AuditEvent.objects.filter(action=AuditAction.INVENTORY_DELETED, object_id=str(build.pk)).exists()


def test_removing_a_build_runs_used_keeps_its_install_for_them_offered_to_no_new_run(lab: SimpleNamespace) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    build = done_build(host, queued_by=otto)
    make_run(host, make_device(host), install_of(build), state=RunState.DONE)

    said = build_remove.build_remove(build=build, by=otto)

    install = PgInstall.objects.get()
    assert install.removed_at is not None and PgBuild.objects.get(pk=build.pk).pg_install == install
    assert "kept for the 1 run that used it, offered to none" in said


def test_a_build_a_queued_run_uses_is_not_removed(lab: SimpleNamespace) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    build = done_build(host, queued_by=otto)
    run = make_run(host, make_device(host), install_of(build), state=RunState.QUEUED)

    with pytest.raises(BuildRefused, match=rf"run {run.pk} \(queued\) uses this build's install"):
        build_remove.build_remove(build=build, by=otto)

    assert lab.removed == [] and PgBuild.objects.get(pk=build.pk).state == BuildState.DONE
    assert PgInstall.objects.get().removed_at is None
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None


def test_a_build_is_not_removed_under_a_running_job_nor_when_its_host_does_not_answer(lab: SimpleNamespace) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    build = done_build(host, queued_by=otto)
    busy = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING)
    Host.objects.filter(pk=host.pk).update(claimed_by=busy)

    with pytest.raises(BuildRefused, match=f"lab1 is busy with run {busy.pk}: remove the build when it is free"):
        build_remove.build_remove(build=build, by=otto)
    Host.objects.filter(pk=host.pk).update(claimed_by=None)
    lab.unreachable = True
    with pytest.raises(BuildRemoveFailed, match=r"lab1 did not remove .*: lab1: no route to host\. Nothing changed"):
        build_remove.build_remove(build=build, by=otto)

    assert PgBuild.objects.get(pk=build.pk).state == BuildState.DONE
    assert PgInstall.objects.get(pk=install_of(build).pk).removed_at is None  # offered again
    assert Host.objects.get(pk=host.pk).claimed_by_build_id is None


def test_building_again_a_removed_build_that_runs_used_takes_its_install_back(lab: SimpleNamespace) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    old = done_build(host, queued_by=otto)
    make_run(host, make_device(host), install_of(old), state=RunState.DONE)
    build_remove.build_remove(build=old, by=otto)
    again, queued = build_queue(host=host, options=debian_options(), by=otto)
    lab.build = lambda options, observer, job_name: built(options)

    assert queued and execute(build_id=started(again).pk) == BuildState.DONE

    install = PgInstall.objects.get()
    assert install.removed_at is None and install.build == PgBuild.objects.get(pk=again.pk)
    assert PgBuild.objects.get(pk=old.pk).pg_install is None


# ---- pages ----


def test_the_form_refuses_bad_input_with_a_summary_and_creates_nothing(client_for: ClientFactory) -> None:
    host = make_host()
    fields = form_fields(host, block_size_kb=3, configure_flags=["--with-llvm"])

    answer = client_for("otto").post(reverse("build-new"), fields)

    page = answer.content.decode()
    assert answer.status_code == 400 and 'id="error-summary"' in page
    assert "The build was not queued." in page
    assert "3 kB is not allowed: PostgreSQL accepts 1 kB, 2 kB, 4 kB, 8 kB, 16 kB, 32 kB." in page
    assert "--with-llvm is not a flag benchlab allows" in page
    assert not PgBuild.objects.exists()


def test_a_source_the_host_does_not_have_is_refused_by_the_page_saying_what_it_has_and_nothing_is_queued(
    client_for: ClientFactory, fake_sources: FakeHostSources, lab: SimpleNamespace
) -> None:
    host = make_host()
    fake_sources.sources = [DEBIAN_15_18, TARBALL_15_20]  # the mirror does not serve the installed 15.20's source

    answer = client_for("otto").post(reverse("build-new"), form_fields(host))

    assert answer.status_code == 400
    assert answer.context["form"].errors["source"] == [
        "debian:postgresql-15=15.20-0+deb12u1 is not a source lab1 has; lab1 has: "
        "PostgreSQL 15.18: Debian source postgresql-15 15.18-0+deb12u1 (cached); "
        "PostgreSQL 15.20: release tarball postgresql-15.20.tar.bz2. A Debian source is added to its cache with "
        "apt-get source --download-only (scripts/fetch-pg-source); a release tarball is copied into "
        f"{settings.PG_TARBALL_DIR}."
    ]
    assert not PgBuild.objects.exists() and not AuditEvent.objects.exists() and lab.sent_builds == []


def test_a_host_that_cannot_be_asked_is_said_on_the_form_and_nothing_is_queued(
    client_for: ClientFactory, fake_sources: FakeHostSources
) -> None:
    host = make_host()
    fake_sources.problem = "no route to host"
    otto = client_for("otto")

    shown = otto.get(reverse("build-new"), {"host": host.pk}).content.decode()
    posted = otto.post(reverse("build-new"), form_fields(host))

    assert "Could not ask lab1 which PostgreSQL sources it has: no route to host. Nothing can be built" in shown
    assert 'id="queue-build" disabled' in shown
    assert posted.status_code == 400 and posted.context["form"].errors["source"] == [
        "could not ask lab1 which PostgreSQL sources it has: no route to host; nothing was queued: try again once "
        "it answers."
    ]
    assert not PgBuild.objects.exists()


def test_the_service_refuses_a_source_the_host_lacks_before_creating_anything(fake_sources: FakeHostSources) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    fake_sources.sources = [DEBIAN_15_18]
    tarball = BuildSource(
        SourceKind.TARBALL, tarball_path="postgresql-15.20.tar.bz2", tarball_dir=settings.PG_TARBALL_DIR
    )

    with pytest.raises(ValidationError) as debian:
        build_queue(host=host, options=debian_options(), by=otto)
    with pytest.raises(ValidationError) as release:
        build_queue(host=host, options=BuildOptions(version="15.20", source=tarball), by=otto)
    fake_sources.problem = "connection refused"
    with pytest.raises(ValidationError) as unasked:
        build_queue(host=host, options=debian_options(), by=otto)

    has = "lab1 has: PostgreSQL 15.18: Debian source postgresql-15 15.18-0+deb12u1 (cached)."
    assert debian.value.message_dict == {"source": [
        "lab1 has no complete Debian source of postgresql-15 15.20-0+deb12u1 in /var/cache/benchlab/pg-sources "
        "(its .dsc and upstream tarball): add it with `apt-get source --download-only postgresql-15=15.20-0+deb12u1` "
        "run as root in /var/cache/benchlab/pg-sources on the host (scripts/fetch-pg-source does that for the "
        f"installed versions), or build from a source the host has. {has}"
    ]}  # fmt: skip
    assert release.value.message_dict == {"source": [
        f"lab1 has no release tarball postgresql-15.20.tar.bz2 in {settings.PG_TARBALL_DIR}: an admin copies it "
        f"there (root's, mode 0644), or build from a source the host has. {has}"
    ]}  # fmt: skip
    assert unasked.value.message_dict == {"source": [
        "could not ask lab1 which PostgreSQL sources it has: connection refused; nothing was queued: try again "
        "once it answers"
    ]}  # fmt: skip
    assert not PgBuild.objects.exists() and not AuditEvent.objects.exists()


def test_the_service_pins_a_tarball_to_the_checksum_found_on_the_host_and_refuses_another(
    fake_sources: FakeHostSources,
) -> None:
    host, otto = make_host(), make_user("otto", "operator")
    asked = BuildSource(SourceKind.TARBALL, tarball_path=TARBALL_15_20.file_name, tarball_dir=settings.PG_TARBALL_DIR)

    build, _ = build_queue(host=host, options=BuildOptions(version="15.20", source=asked), by=otto)
    with pytest.raises(ValidationError) as other:
        wrong = dataclasses.replace(asked, sha256="ff" * 32)
        build_queue(host=host, options=BuildOptions(version="15.20", source=wrong, block_size_kb=2), by=otto)
    with pytest.raises(ValidationError) as version:
        build_queue(host=host, options=BuildOptions(version="15.18", source=asked, block_size_kb=2), by=otto)

    assert build.sha256 == TARBALL_15_20.sha256  # the SOURCE step refuses a tarball swapped since
    assert other.value.message_dict["source"][0].startswith(
        f"postgresql-15.20.tar.bz2 on lab1 has SHA-256 {TARBALL_15_20.sha256}, not the {'ff' * 32} given"
    )
    assert version.value.message_dict["source"] == [
        "PostgreSQL 15.20: release tarball postgresql-15.20.tar.bz2 is PostgreSQL 15.20, not 15.18: ask for 15.20"
    ]
    assert PgBuild.objects.count() == 1


def test_the_form_takes_the_version_from_the_package_and_queues_then_says_when_it_is_the_same_build(
    client_for: ClientFactory,
) -> None:
    host = make_host()
    otto = client_for("otto")

    first = otto.post(reverse("build-new"), form_fields(host))
    build = PgBuild.objects.get()
    PgBuild.objects.filter(pk=build.pk).update(state=BuildState.DONE)
    second = otto.post(reverse("build-new"), form_fields(host), follow=True)

    assert first.status_code == 302 and first["Location"] == f"/builds/{build.pk}/"
    assert build.version == "15.20" and build.block_size_kb == 4 and build.configure_flags == []
    assert PgBuild.objects.count() == 1
    assert (
        f"lab1 already has this build: build {build.pk}, PostgreSQL 15.20 4 kB pages. It is reused: nothing is "
        "built again." in second.content.decode()
    )


def test_the_form_preselects_a_host_and_lists_its_sources_with_version_and_checksum(
    client_for: ClientFactory, fake_sources: FakeHostSources
) -> None:
    host = make_host(name="lab2")
    otto = client_for("otto")

    page = otto.get(reverse("build-new"), {"host": host.pk}).content.decode()
    no_host = otto.get(reverse("build-new")).content.decode()
    bad = otto.get(reverse("build-new"), {"host": "two"})

    assert f'<option value="{host.pk}" selected>lab2</option>' in page
    rows = re.findall(r'<tr id="source-\d+" data-key="([^"]+)">', page)
    assert rows == [DEBIAN_15_18.key, DEBIAN_15_20.key, TARBALL_15_20.key]
    assert "<code>postgresql-15 15.18-0+deb12u1</code>" in page and "<code>postgresql-15.20.tar.bz2</code>" in page
    assert f'<code class="sha256" title="SHA-256 {"18" * 32}">{"18" * 6}…</code>' in page
    assert '15.20-0+deb12u1"' not in page.replace(DEBIAN_15_20.key, "")  # no placeholder, no guess
    assert fake_sources.asked == ["lab2"]
    assert (
        "Choose a host above: the sources it has are listed here." in no_host and 'id="queue-build" disabled' in no_host
    )
    assert bad.status_code == 400


def test_a_failed_builds_page_shows_its_step_command_exit_status_and_output(client_for: ClientFactory) -> None:
    build = make_build(make_host(), state=BuildState.FAILED, failed_step="make", failed_command="make -j4",
                       failed_exit_status=2, failed_output="gram.y:12: error: syntax error",
                       error="make failed: gram.y:12: error: syntax error",
                       steps=[["source", "2025-04-01T14:00:00+00:00"]])  # fmt: skip

    page = client_for("vera").get(reverse("build-detail", args=[build.pk])).content.decode()

    assert "<h2>Failed at make</h2>" in page and '<code id="failed-command">make -j4</code>' in page
    assert '<span id="failed-exit-status">2</span>' in page and "gram.y:12: error: syntax error" in page
    assert 'class="build-step step-failed" id="step-make"' in page
    assert 'class="build-step step-done" id="step-source"' in page


def test_a_done_builds_page_links_its_install_and_a_run_with_it(client_for: ClientFactory) -> None:
    host = make_host()
    build = done_build(host, built_block_size=4096, built_wal_block_size=8192, built_segment_size=1024**3)

    admin_page = client_for("ada").get(reverse("build-detail", args=[build.pk])).content.decode()
    viewer_page = client_for("vera").get(reverse("build-detail", args=[build.pk])).content.decode()

    assert f'href="/admin/runs/pginstall/{build.pg_install_id}/change/"' in admin_page
    assert f"/runs/new/?pg_install={build.pg_install_id}" in admin_page
    assert '<td id="built-block-size">4 kB</td>' in admin_page
    # The link opens the queue form on the build's host with its install chosen.
    form = client_for("otto").get(reverse("run-new"), {"pg_install": str(build.pg_install_id)}).content.decode()
    assert re.search(rf'<option value="{build.pg_install_id}"[^>]* selected', form), form
    assert re.search(rf'<option value="{host.pk}"[^>]* selected', form)
    assert "/admin/runs/pginstall/" not in viewer_page and f"?pg_install={build.pg_install_id}" not in viewer_page
    # A viewer sees the controls disabled, each with why (runs/templatetags/controls.py).
    assert '<button type="button" id="queue-run" disabled aria-describedby="queue-run-refusal">' in viewer_page
    assert "Operators queue runs; you are a viewer (an admin gives roles)." in viewer_page
    assert 'id="remove" disabled' in viewer_page and "To remove builds needs the operator role" in viewer_page
    assert 'action="/builds/' not in viewer_page


def test_the_build_list_and_the_inventory_say_which_build_a_host_is_busy_with(client_for: ClientFactory) -> None:
    host = make_host()
    build = make_build(host, state=BuildState.BUILDING, step="make", progress=42.0)
    Host.objects.filter(pk=host.pk).update(claimed_by_build=build)
    vera = client_for("vera")

    listing = vera.get(reverse("builds")).content.decode()
    inventory = " ".join(vera.get(reverse("home")).content.decode().split())

    assert f'<a href="/builds/{build.pk}/">15.20</a>, 4 kB pages' in listing and "make 42 %" in listing
    assert f'with <a href="/builds/{build.pk}/">build {build.pk}</a> (PostgreSQL 15.20, building)' in inventory


def test_cancel_and_remove_through_the_pages(client_for: ClientFactory, users: dict[str, User],
                                             lab: SimpleNamespace) -> None:  # fmt: skip
    host = make_host()
    queued = make_build(host, options=debian_options(block_size_kb=16), queued_by=users["otto"])
    done = done_build(host, queued_by=users["otto"])
    otto = client_for("otto")

    cancelled = otto.post(reverse("build-cancel", args=[queued.pk]), follow=True).content.decode()
    removed = otto.post(reverse("build-remove", args=[done.pk]), follow=True).content.decode()
    again = otto.post(reverse("build-remove", args=[done.pk]), follow=True).content.decode()

    assert f"Build {queued.pk} cancelled: it left the queue before anything ran." in cancelled
    assert f"Build {done.pk} removed: {done.prefix} is gone from lab1" in removed
    assert f"Build {done.pk} was removed already." in again


# ---- permissions ----


def test_a_viewer_sees_builds_but_may_not_queue_cancel_or_remove_them(client_for: ClientFactory,
                                                                     users: dict[str, User]) -> None:  # fmt: skip
    host = make_host()
    build = make_build(host, queued_by=users["otto"])
    vera = client_for("vera")

    assert vera.get(reverse("builds")).status_code == 200
    assert vera.get(reverse("build-detail", args=[build.pk])).status_code == 200
    assert vera.get(reverse("build-new")).status_code == 403
    assert vera.post(reverse("build-new"), form_fields(host)).status_code == 403
    assert vera.post(reverse("build-cancel", args=[build.pk])).status_code == 403
    assert vera.post(reverse("build-remove", args=[build.pk])).status_code == 403
    assert client_for("nora").get(reverse("builds")).status_code == 403
    assert Client().get(reverse("builds")).status_code == 302  # to the login page
    assert PgBuild.objects.get(pk=build.pk).state == BuildState.QUEUED


# ---- the API ----


def test_the_api_queues_finds_the_same_build_lists_and_cancels(users: dict[str, User]) -> None:
    host = make_host()
    otto = api_client(users["otto"])
    body = form_fields(host, configure_flags=["--enable-debug"])

    created = otto.post("/api/builds/", body, format="json")
    same = otto.post("/api/builds/", body, format="json")
    listed = otto.get("/api/builds/", {"host": host.pk}).json()
    detail = otto.get(f"/api/builds/{created.json()['id']}/").json()
    cancelled = otto.post(f"/api/builds/{created.json()['id']}/cancel/")

    assert created.status_code == 201 and same.status_code == 200
    assert same.json()["id"] == created.json()["id"]
    assert created.json()["configure_flags"] == ["--enable-debug"] and created.json()["version"] == "15.20"
    assert created.json()["source"] == DEBIAN_15_20.key and created.json()["package_version"] == DEBIAN_VERSION
    assert [b["id"] for b in listed["results"]] == [created.json()["id"]]
    assert detail["state"] == "queued" and detail["steps"] == []
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"


def test_the_api_refuses_bad_input_with_the_forms_words_and_a_viewer_may_not_queue(users: dict[str, User]) -> None:
    host = make_host()
    refused = api_client(users["otto"]).post("/api/builds/", form_fields(host, block_size_kb=3), format="json")
    svn = {"host": host.pk, "source_kind": "svn"}
    refused_kind = api_client(users["otto"]).post("/api/builds/", svn, format="json")
    viewer = api_client(users["vera"]).post("/api/builds/", form_fields(host), format="json")
    bad_filter = api_client(users["vera"]).get("/api/builds/", {"state": "sleeping"})

    assert refused.status_code == 400
    assert refused_kind.json() == {"source_kind": ["Choose the Debian source package or a source tarball, not svn."]}
    assert refused.json()["block_size_kb"] == [
        "3 kB is not allowed: PostgreSQL accepts 1 kB, 2 kB, 4 kB, 8 kB, 16 kB, 32 kB."
    ]
    assert viewer.status_code == 403 and bad_filter.status_code == 400
    assert not PgBuild.objects.exists()


@pytest.mark.parametrize(
    "asked", ["/etc/shadow", "../../etc/passwd", f"{settings.PG_TARBALL_DIR}/x.tar.gz", "sub/x.tar.gz"]
)
def test_a_tarball_the_host_does_not_list_is_refused_by_the_page_and_the_api_and_nothing_is_queued(
    users: dict[str, User], lab: SimpleNamespace, asked: str
) -> None:
    host = make_host()
    body = form_fields(host, source=f"tarball:{asked}")
    legacy = {"host": host.pk, "source_kind": "tarball", "tarball_path": asked, "version": "15.20"}
    page = Client()
    page.force_login(users["otto"])

    by_page = page.post(reverse("build-new"), body)
    by_api = api_client(users["otto"]).post("/api/builds/", body, format="json")
    by_old_api = api_client(users["otto"]).post("/api/builds/", legacy, format="json")

    said = f"tarball:{asked} is not a source lab1 has; lab1 has: "
    assert by_page.status_code == 400 and by_page.context["form"].errors["source"][0].startswith(said)
    assert by_api.status_code == 400 and by_api.json()["source"][0].startswith(said)
    assert by_old_api.status_code == 400 and by_old_api.json()["source"][0].startswith(said)
    assert not PgBuild.objects.exists() and not AuditEvent.objects.exists()
    assert lab.sent_builds == []  # no worker was asked to go near the host


def test_the_api_lists_a_hosts_sources_and_takes_one_by_key_or_by_the_old_fields(
    users: dict[str, User], fake_sources: FakeHostSources
) -> None:
    host = make_host()
    otto = api_client(users["otto"])

    listed = otto.get(f"/api/hosts/{host.pk}/build-sources/")
    by_viewer = api_client(users["vera"]).get(f"/api/hosts/{host.pk}/build-sources/")
    by_key = otto.post("/api/builds/", form_fields(host, source=TARBALL_15_20.key), format="json")
    old = {"host": host.pk, "source_kind": "debian", "package": "postgresql-15", "package_version": "15.18-0+deb12u1",
           "block_size_kb": 2}  # fmt: skip
    by_old_fields = otto.post("/api/builds/", old, format="json")
    checked = form_fields(host, source=TARBALL_15_20.key, sha256="ab" * 32, block_size_kb=2)
    wrong_sum = otto.post("/api/builds/", checked, format="json")
    fake_sources.problem = "timed out"
    unasked = otto.get(f"/api/hosts/{host.pk}/build-sources/")

    assert listed.status_code == 200 and listed.json()["sources"][2] == {
        "key": "tarball:postgresql-15.20.tar.bz2", "kind": "tarball", "version": "15.20", "sha256": "2a" * 32,
        "file_name": "postgresql-15.20.tar.bz2", "package": "", "package_version": "",
        "label": "PostgreSQL 15.20: release tarball postgresql-15.20.tar.bz2",
    }  # fmt: skip
    assert [s["key"] for s in listed.json()["sources"]] == [DEBIAN_15_18.key, DEBIAN_15_20.key, TARBALL_15_20.key]
    assert by_viewer.status_code == 403
    assert by_key.status_code == 201 and by_key.json()["sha256"] == "2a" * 32 and by_key.json()["version"] == "15.20"
    assert by_old_fields.status_code == 201 and by_old_fields.json()["source"] == DEBIAN_15_18.key
    assert by_old_fields.json()["version"] == "15.18"
    assert wrong_sum.status_code == 400 and wrong_sum.json() == {
        "sha256": [f"postgresql-15.20.tar.bz2 on the host has SHA-256 {'2a' * 32}, not the one given."]
    }
    assert unasked.status_code == 503 and unasked.json() == {
        "host": host.pk, "detail": "could not ask lab1 which PostgreSQL sources it has: timed out"
    }  # fmt: skip


def test_the_api_removes_a_build_or_says_why_not(users: dict[str, User], lab: SimpleNamespace) -> None:
    host = make_host()
    build = done_build(host, queued_by=users["otto"])
    run = make_run(host, make_device(host), install_of(build), state=RunState.QUEUED)
    otto = api_client(users["otto"])

    in_use = otto.post(f"/api/builds/{build.pk}/remove/")
    assert Host.objects.get(pk=host.pk).claimed_by_id == run.pk  # its turn came when the removal let go
    busy = otto.post(f"/api/builds/{build.pk}/remove/")
    release_hosts(run)  # the run ends, as its worker would end it
    Run.objects.filter(pk=run.pk).update(state=RunState.DONE)
    removed = otto.post(f"/api/builds/{build.pk}/remove/")

    assert in_use.status_code == 400 and f"run {run.pk} (queued) uses" in in_use.json()["detail"]
    assert busy.status_code == 400 and f"lab1 is busy with run {run.pk}" in busy.json()["detail"]
    assert removed.status_code == 200 and removed.json()["state"] == "removed"


# ---- the admin ----


def test_the_host_admin_sends_to_the_build_form_for_one_host_and_says_its_build(client_for: ClientFactory) -> None:
    lab1, lab2 = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    build = make_build(lab1, state=BuildState.BUILDING)
    Host.objects.filter(pk=lab1.pk).update(claimed_by_build=build)
    ada = client_for("ada")
    changelist = reverse("admin:runs_host_changelist")

    one = ada.post(changelist, {"action": "build_postgres", "_selected_action": [lab2.pk]})
    two = ada.post(changelist, {"action": "build_postgres", "_selected_action": [lab1.pk, lab2.pk]}, follow=True)
    listed = ada.get(changelist).content.decode()

    assert one.status_code == 302 and one["Location"] == f"/builds/new/?host={lab2.pk}"
    assert "Choose exactly one host to build PostgreSQL on." in two.content.decode()
    assert f"busy with build {build.pk} (building)" in listed


def test_builds_are_read_only_in_the_admin_and_its_action_removes_them(
    client_for: ClientFactory, users: dict[str, User], lab: SimpleNamespace
) -> None:
    host = make_host()
    build = done_build(host, queued_by=users["otto"])
    ada = client_for("ada")
    changelist = reverse("admin:runs_pgbuild_changelist")

    listed = ada.get(changelist)
    change = ada.get(reverse("admin:runs_pgbuild_change", args=[build.pk]))
    removed = ada.post(changelist, {"action": "remove_builds", "_selected_action": [build.pk]}, follow=True)

    assert (
        listed.status_code == 200 and f'<a href="/builds/{build.pk}/">build {build.pk}</a>' in listed.content.decode()
    )
    assert change.status_code == 200 and "Save" not in change.content.decode()  # view only
    assert ada.get(reverse("admin:runs_pgbuild_add")).status_code == 403
    assert f"Build {build.pk} removed: {build.prefix} is gone from lab1" in removed.content.decode()
    assert lab.removed == [("lab1", build.prefix)]


def test_steps_show_their_start_and_end_on_the_page_and_in_the_api_also_for_builds_recorded_without_ends(
    client_for: ClientFactory, users: dict[str, User]
) -> None:
    host = make_host()
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=10)
    at = [(start + timedelta(seconds=s)).isoformat() for s in (0, 9, 20, 230, 240, 250)]
    recorded = make_build(
        host,
        state=BuildState.FAILED,
        failed_step="make",
        finished_at=start + timedelta(seconds=230),
        steps=[["source", at[0], at[1]], ["configure", at[1], at[2]], ["make", at[2], at[3]]],
    )
    old = make_build(host, options=debian_options(block_size_kb=2), state=BuildState.DONE,
                     finished_at=start + timedelta(seconds=250),
                     steps=[["source", at[0]], ["configure", at[1]], ["make", at[2]], ["install", at[3]],
                            ["verify", at[4]]])  # fmt: skip

    page = client_for("vera").get(reverse("build-detail", args=[recorded.pk])).content.decode()
    api = api_client(users["vera"])
    recorded_api = api.get(f"/api/builds/{recorded.pk}/").json()["step_times"]
    old_api = api.get(f"/api/builds/{old.pk}/").json()["step_times"]

    clock = [timezone.localtime(start + timedelta(seconds=s)).strftime("%H:%M:%S") for s in (0, 9, 20, 230)]
    shown = re.findall(r'id="step-(\w+)".*?<span class="step-times">(.*?)</span></li>', page)
    assert [(step, re.sub(r"<[^>]+>", "", times)) for step, times in shown] == [
        ("source", f"{clock[0]}–{clock[1]}"), ("configure", f"{clock[1]}–{clock[2]}"),
        ("make", f"{clock[2]}–{clock[3]}"),
    ]  # fmt: skip
    assert recorded_api[2] == {"step": "make", "started_at": at[2], "ended_at": at[3]}
    # Recorded before steps had ends: each ends when the next starts, the last when the build finished.
    assert [(s["step"], s["started_at"], s["ended_at"]) for s in old_api] == [
        ("source", at[0], at[1]), ("configure", at[1], at[2]), ("make", at[2], at[3]), ("install", at[3], at[4]),
        ("verify", at[4], at[5]),
    ]  # fmt: skip
