"""Execute one queued PostgreSQL build on its host: the dispatcher (services.queue) has claimed
the host for it; this drives runs.lab.pg_build, registers the install, and makes sure the build
ends done, failed or cancelled and its host is released whatever happens.

The install is registered in the same transaction that marks the build done: there is never a
PgInstall of a build that is not done, nor a done build without its install. The lab layer
removes its work directory and staging on every failure and cancel, and moves a build into its
prefix only once verified, so a failed build leaves nothing half-written either.
"""

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from runs.jobs.dispatch import queue_dispatch, release_hosts
from runs.lab.errors import CommandFailed, tail
from runs.lab.pg_build import BuildFailed, BuiltInstall, build_postgres
from runs.lab.pg_build_options import build_label
from runs.models import AuditAction, BuildState, Host, PgBuild, PgInstall
from runs.services.audit import audit_record
from runs.services.build_observer import BuildCancelled, BuildJobObserver, build_cancel_requested
from runs.services.builds import build_options_of, build_transition
from runs.services.cancel_watch import CancelWatch
from runs.services.db_retry import with_database_retry
from runs.services.heartbeat import beating, heartbeat_every_s, stale_after_s
from runs.services.host_reach import NOT_STARTED, HostAway
from runs.services.lab_access import host_connect, host_connect_for_run
from runs.services.own_server import own_server_assert_closed

log = logging.getLogger(__name__)
FAILED_OUTPUT_LINES = 40

Ending = tuple[BuildState, dict[str, Any]]  # the final state and the fields that go with it


def build_execute(*, build_id: int) -> str:
    """Build it. Returns "waiting" (it does not hold its host: the dispatcher sends it again),
    "running" (another worker is building it: look again later), "abandoned" (the worker that
    started it died: services.build_sweeper ends it), or the state it ended in."""
    build = PgBuild.objects.select_related("host", "queued_by").get(pk=build_id)
    if build.is_finished:
        return build.state
    if build.state != BuildState.QUEUED or build.started_at is not None:
        return "running" if build_has_live_worker(build) else "abandoned"
    if not Host.objects.filter(pk=build.host_id, claimed_by_build=build).exists():
        return "waiting"
    if refusal := build.host.own_server_refusal():  # forbidden after it was queued
        release_hosts(build)
        build_transition(build=build, state=BuildState.FAILED, error=refusal)
        queue_dispatch()
        return build.state
    if not _mark_started(build):
        return build.state  # cancelled while queued; the cancel gave its host to the next in line
    return _drive_to_end(build)


def build_has_live_worker(build: PgBuild) -> bool:
    return build.heartbeat_at is not None and timezone.now() - build.heartbeat_at < timedelta(seconds=stale_after_s())


def _mark_started(build: PgBuild) -> bool:
    """Queued -> building, stamped with this worker, unless it was cancelled meanwhile. From
    here on a cancel only asks: this worker stops the build and releases its host."""
    now, worker = timezone.now(), socket.gethostname()
    fields = {"started_at": now, "worker": worker, "heartbeat_at": now}
    if build_transition(build=build, state=BuildState.BUILDING, from_state=BuildState.QUEUED, **fields):
        return True
    build.refresh_from_db(fields=["state", "started_at", "worker"])
    return False


def _drive_to_end(build: PgBuild) -> str:
    observer = BuildJobObserver(build)
    built: BuiltInstall | None = None
    try:
        with build_heartbeat(build, observer):
            ending, built = _build(build, observer)
            if built is not None:
                ending = _register(build, built, observer)
    except Exception as exc:
        log.exception("build %s: benchlab failed", build.pk)
        ending = BuildState.FAILED, {"error": f"benchlab failed: {exc!r}", "failed_step": observer.current_step}
    finally:
        release_hosts(build)
    state, fields = ending
    if state != BuildState.DONE:
        steps = observer.steps_ended(timezone.now())  # the step it stopped in ends now
        fields = {"log": observer.log_text(), "progress": observer.percent, "steps": steps, **fields}
        if not build_transition(build=build, state=state, **fields):
            build.refresh_from_db(fields=["state"])
    queue_dispatch()
    return build.state


def _build(build: PgBuild, observer: BuildJobObserver) -> tuple[Ending, BuiltInstall | None]:
    """The lab layer's build, watched for a cancel; what it built, or how it ended."""
    if observer.check_cancel():  # cancelled while its worker was starting it: no host is touched
        return (BuildState.CANCELLED, {}), None
    try:
        options = build_options_of(build)
        transport = host_connect_for_run(build.host)
    except HostAway as away:  # nothing started: it waits for the host (services.host_reach)
        return (
            (BuildState.FAILED, {"error": away.failure}) if away.overdue else (BuildState.QUEUED, NOT_STARTED)
        ), None
    except Exception as exc:  # noqa: BLE001 - e.g. a refused host key, an undecryptable key
        return failure(observer, exc), None
    watch = CancelWatch(build.pk, observer.cancel_now, requested=lambda: build_cancel_requested(build.pk), what="build")
    try:
        with watch:
            own_server_assert_closed([(build.host, transport)])  # a build runs make as the run user
            built = build_postgres(
                transport, lambda: host_connect(build.host), options, observer, job_name=build.job_name
            )
    except BuildCancelled:
        return (BuildState.CANCELLED, {}), None
    except Exception as exc:  # noqa: BLE001 - every failure ends the build as failed, with its reason
        return ((BuildState.CANCELLED, {}) if observer.cancelled else failure(observer, exc)), None
    finally:
        transport.close()
    return (BuildState.DONE, {}), built


def failure(observer: BuildJobObserver, exc: Exception) -> Ending:
    """A failed build's fields: the failing step, its command, exit status and output's tail."""
    fields: dict[str, Any] = {"failed_step": observer.current_step, "error": str(exc)}
    if isinstance(exc, BuildFailed):
        fields |= {
            "failed_step": str(exc.step),
            "failed_command": exc.command,
            "failed_exit_status": exc.exit_status,
            "failed_output": tail(exc.output or observer.log_tail(FAILED_OUTPUT_LINES), FAILED_OUTPUT_LINES),
        }
    elif isinstance(exc, CommandFailed):
        fields |= {
            "failed_command": exc.command,
            "failed_exit_status": exc.exit_status,
            "failed_output": tail(exc.stderr or exc.stdout) or observer.log_tail(FAILED_OUTPUT_LINES),
        }
    else:
        fields["failed_output"] = observer.log_tail(FAILED_OUTPUT_LINES)
    log.warning("build %s failed in %s: %s", observer.build.pk, fields["failed_step"] or "connecting", exc)
    return BuildState.FAILED, fields


def _register(build: PgBuild, built: BuiltInstall, observer: BuildJobObserver) -> Ending:
    """The verified build becomes a PgInstall, in the transaction that marks the build done
    and frees its host. Repeated whole through a restart of benchlab's database."""
    label = build_label(build_options_of(build))[:100]

    def register() -> bool:
        with transaction.atomic():
            install, _ = PgInstall.objects.update_or_create(
                host=build.host,
                bin_dir=built.bin_dir,
                defaults={
                    "version": built.version,
                    "block_size": built.block_size,
                    "wal_block_size": built.wal_block_size,
                    "label": label,
                    "removed_at": None,
                },
            )
            # The same prefix built again after an earlier build of it was removed: the install
            # (kept for that build's runs) is this build's now.
            PgBuild.objects.filter(pg_install=install).exclude(pk=build.pk).update(pg_install=None)
            done = build_transition(
                build=build,
                state=BuildState.DONE,
                from_state=BuildState.BUILDING,
                pg_install=install,
                reused=built.reused,
                built_version=built.version,
                built_block_size=built.block_size,
                built_wal_block_size=built.wal_block_size,
                built_segment_size=built.segment_size,
                pgbench_version=built.pgbench_version[:200],
                source_sha256=built.source_sha256,
                step="",
                progress=None,
                steps=observer.steps_ended(timezone.now()),
                log=observer.log_text(),
            )
            if not done:  # ended from outside meanwhile: nothing is registered
                transaction.set_rollback(True)
                return False
            release_hosts(build)
            how = "found on the host and verified" if built.reused else "built and verified"
            audit_record(action=AuditAction.INVENTORY_ADDED, target=install, message=f"build {build.pk}: {how}")
        return True

    if with_database_retry(register, f"build {build.pk}: registering its install"):
        return BuildState.DONE, {}
    build.refresh_from_db(fields=["state"])
    return BuildState(build.state), {}


@contextmanager
def build_heartbeat(build: PgBuild, observer: BuildJobObserver) -> Iterator[None]:
    """Stamp the build's heartbeat now and every heartbeat_every_s until the block ends, with
    its progress and the last lines of its log (what its page shows after a reload)."""
    building = PgBuild.objects.filter(pk=build.pk, state=BuildState.BUILDING)

    def stamp() -> None:
        building.update(heartbeat_at=timezone.now(), progress=observer.percent, log=observer.log_text())

    with beating(stamp, f"build {build.pk}", heartbeat_every_s()):
        yield
