"""Execute one queued PostgreSQL build on its host: the dispatcher (jobs.dispatch) has claimed the
host for it; this drives runs.lab.pgbuild.build and registers the install (BuildExecution), and
runs.jobs.execute makes sure the build ends done, failed or cancelled and its host is released
whatever happens.

The install is registered in the same transaction that marks the build done: there is never a
PgInstall of a build that is not done, nor a done build without its install. The lab layer
removes its work directory and staging on every failure and cancel, and moves a build into its
prefix only once verified, so a failed build leaves nothing half-written either.
"""

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from runs.builds.services.builds import build_options_of
from runs.builds.services.observer import BuildCancelled, BuildJobObserver
from runs.common.db_retry import with_database_retry
from runs.common.services.audit import audit_record
from runs.inventory.services.connect import host_connect, host_connect_for_run
from runs.inventory.services.own_server import own_server_assert_closed
from runs.jobs.cancel_watch import CancelWatch
from runs.jobs.dispatch import release_hosts
from runs.jobs.execute import Execution, away_ending, failure_output, job_execute
from runs.jobs.host_reach import HostAway
from runs.jobs.kinds import BUILD, KINDS
from runs.jobs.transitions import build_transition
from runs.lab.errors import tail
from runs.lab.pgbuild.build import BuildFailed, BuiltInstall, build_postgres
from runs.lab.pgbuild.options import build_label
from runs.models import AuditAction, BuildState, PgBuild, PgInstall

log = logging.getLogger(__name__)
FAILED_OUTPUT_LINES = 40

Ending = tuple[BuildState, dict[str, Any]]  # the final state and the fields that go with it


class BuildExecution(Execution[PgBuild]):
    """A PostgreSQL build, done by its worker (jobs.execute does the rest): queued -> building ->
    done, its heartbeat and its end storing its progress, steps and log."""

    kind = KINDS[BUILD]
    started_state = BuildState.BUILDING
    failed_state = BuildState.FAILED

    def __init__(self, build: PgBuild) -> None:
        super().__init__(build)
        # Made here, not lazily: the heartbeat's thread and the work both read this one.
        self.observer = BuildJobObserver(build)

    @classmethod
    def load(cls, job_id: int) -> PgBuild:
        return PgBuild.objects.select_related("host", "queued_by").get(pk=job_id)

    def transition(self, state: str, from_state: str | None = None, **fields: Any) -> bool:
        before = None if from_state is None else BuildState(from_state)
        return build_transition(build=self.job, state=BuildState(state), from_state=before, **fields)

    def refusal(self) -> str | None:
        return self.job.host.own_server_refusal()  # forbidden after it was queued

    def heartbeat_fields(self) -> dict[str, Any]:
        return {"progress": self.observer.percent, "log": self.observer.log_text()}

    def work(self) -> Ending:
        ending, built = _build(self.job, self.observer)
        if built is not None:
            ending = _register(self.job, built, self.observer)
        return ending

    def crash_fields(self) -> dict[str, Any]:
        return {"failed_step": self.observer.current_step}

    def end(self, state: str, fields: dict[str, Any]) -> bool:
        if state == BuildState.DONE:
            return True  # ended with its install's registration (_register)
        steps = self.observer.steps_ended(timezone.now())  # the step it stopped in ends now
        shown = {"log": self.observer.log_text(), "progress": self.observer.percent, "steps": steps}
        return self.transition(state, **shown | fields)

    def ended(self) -> None:
        """Nothing more: build_transition calls what follows a build's end (jobs.hooks)."""


def build_execute(*, build_id: int) -> str:
    """Build it: the dispatcher (jobs.dispatch) has claimed its host for it (jobs.execute.job_execute
    says what it returns; builds.services.sweeper ends a build whose worker died)."""
    return job_execute(BuildExecution, build_id)


def _build(build: PgBuild, observer: BuildJobObserver) -> tuple[Ending, BuiltInstall | None]:
    """The lab layer's build, watched for a cancel; what it built, or how it ended."""
    if observer.check_cancel():  # cancelled while its worker was starting it: no host is touched
        return (BuildState.CANCELLED, {}), None
    try:
        options = build_options_of(build)
        transport = host_connect_for_run(build.host)
    except HostAway as away:  # nothing started: it waits for the host (jobs.host_reach)
        return away_ending(away, BuildState.QUEUED, BuildState.FAILED), None
    except Exception as exc:  # noqa: BLE001 - e.g. a refused host key, an undecryptable key
        return failure(observer, exc), None
    watch = CancelWatch(build, observer.cancel_now)
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
    else:
        fields |= failure_output(exc, observer.log_tail(FAILED_OUTPUT_LINES))
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
