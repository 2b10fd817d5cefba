"""An imported run stored (issue 35): pgbench output read elsewhere (runs.imports.reading)
becomes a done run marked "imported", with the setup its importer described, so it lists,
compares and exports like a measured one. It never ran on a lab host here: nothing touches one.

Everything is checked before the first write (import_setup_errors; the files by the reader),
and the run, its samples, outputs and audit event are written in one transaction: a failure
leaves nothing half-made."""

import dataclasses
import hashlib
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from runs.common.services.audit import audit_record
from runs.imports.reading import ImportedOutput
from runs.models import AuditAction, Run, RunArtifact, RunOrigin, RunSample, RunState, RunTransition

# The setup fields the report also states: blank in the form, the report's value is taken;
# given, the two must agree.
REPORTED_SETUP = {"scale": "scaling_factor", "clients": "clients", "threads": "threads"}


@dataclasses.dataclass(frozen=True)
class ImportedFile:
    """One uploaded file as the run records it; its text is kept as a run output."""

    kind: str  # "report", "transaction-log" or "aggregate-log"
    name: str
    text: str

    def record(self) -> dict[str, Any]:
        data = self.text.encode()
        return {"kind": self.kind, "name": self.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def import_setup_errors(run: Run, output: ImportedOutput) -> dict[str, str]:
    """What the described setup says against the report (field: message); fills a blank field from
    it. {} when the run may be stored."""
    errors: dict[str, str] = {}
    summary = output.summary
    for field, reported_name in REPORTED_SETUP.items():
        reported = getattr(summary, reported_name) if summary else None
        given = getattr(run, field)
        if given is None and reported is None:
            errors[field] = f"Give the run's {field}: the uploaded output does not say it."
        elif given is None:
            setattr(run, field, reported)
        elif reported is not None and given != reported:
            errors[field] = f"{given} here, but the report says {reported_name.replace('_', ' ')}: {reported}."
    if run.device_id is not None and run.server_host_id is not None and run.device.host_id != run.server_host_id:
        errors["device"] = f"{run.device.name} is on {run.device.host}, not on {run.server_host}."
    if (
        run.pg_install_id is not None
        and run.server_host_id is not None
        and run.pg_install.host_id != run.server_host_id
    ):
        errors["pg_install"] = f"{run.pg_install} is on {run.pg_install.host}, not on {run.server_host}."
    return errors


def _started(output: ImportedOutput) -> datetime | None:
    """When pgbench started, where a log says it (the aggregate log's first interval)."""
    if output.aggregate:
        return datetime.fromtimestamp(output.aggregate[0].start_epoch, tz=UTC)
    return None


def _environment(run: Run, output: ImportedOutput, files: Sequence[ImportedFile], user: Any) -> dict[str, Any]:
    """The setup as described, in the measured runs' shape (bench.services.results), so that
    comparisons and exports read it alike; "imported" says it was not probed."""
    pg = run.pg_install
    return {
        "host": {"name": run.server_host.name, "address": run.server_host.address},
        "device": {
            "name": run.device.name,
            "kind": run.device.kind,
            "path": run.device.path,
            "model": run.device.model,
            "serial": run.device.serial,
            "capacity_bytes": run.device.capacity_bytes,
        },
        "filesystem": {
            "type": run.filesystem,
            "mount_options_requested": run.mount_options,
            "mount_options": run.mount_options,
        },
        "postgresql": {
            "version": pg.version,
            "bin_dir": pg.bin_dir,
            "block_size": pg.block_size,
            "wal_block_size": pg.wal_block_size,
            "page_sizes_from": "inventory",
        },
        "pgbench": {
            "version": output.pgbench_version,
            "host": "",
            "command": "",
            "started_epoch": output.aggregate[0].start_epoch if output.aggregate else None,
        },
        "clients": [],
        "imported": {
            "by": user.get_username() if user is not None else "",
            "at": timezone.now().isoformat(),
            "files": [file.record() for file in files],
        },
    }


def _set_results(run: Run, output: ImportedOutput) -> None:
    summary, latency = output.summary, output.latency
    run.summary = dataclasses.asdict(summary) if summary else {}
    run.tps, run.latency_avg_ms, run.latency_stddev_ms = output.tps, output.latency_avg_ms, output.latency_stddev_ms
    run.failed_transactions = summary.failed if summary else None
    run.skipped_transactions = summary.skipped if summary else None
    tps = [sample.tps for _, sample in output.samples]
    run.steady_tps_mean = statistics.fmean(tps) if tps else None
    run.steady_tps_stddev = statistics.stdev(tps) if len(tps) > 1 else None
    run.latency_p50_ms = latency.p50_ms if latency else None
    run.latency_p95_ms = latency.p95_ms if latency else None
    run.latency_p99_ms = latency.p99_ms if latency else None
    run.metrics = {
        "pg_stats": {},
        "aggregate": [dataclasses.asdict(interval) for interval in output.aggregate],
        "latency": dataclasses.asdict(latency) if latency else None,
        "latency_seconds": [],
    }


def run_import(
    *,
    run: Run,
    output: ImportedOutput,
    files: Sequence[ImportedFile],
    user: Any,
    request: HttpRequest | None = None,
) -> Run:
    """Store `run` (unsaved: its setup from the form) as a done, imported run with what `output`
    holds. ValueError, before anything is written, if import_setup_errors finds anything."""
    if errors := import_setup_errors(run, output):
        raise ValueError("; ".join(f"{field}: {message}" for field, message in errors.items()))
    now = timezone.now()
    run.origin, run.imported_by, run.imported_files = RunOrigin.IMPORTED, user, [f.record() for f in files]
    run.state, run.duration_s, run.warmup_s = RunState.DONE, output.duration_s, 0
    run.random_seed, run.log_sampling_rate = None, output.latency.sampling_rate if output.latency else None
    run.started_at = _started(output)
    run.finished_at = run.started_at + timedelta(seconds=output.duration_s) if run.started_at else now
    run.results_stored_at = now
    _set_results(run, output)
    run.environment = _environment(run, output, files, user)
    with transaction.atomic():
        run.save()
        RunSample.objects.bulk_create(
            RunSample(run=run, second=second, tps=p.tps, latency_ms=p.latency_ms,
                      latency_stddev_ms=p.latency_stddev_ms, failed=p.failed, lag_ms=p.lag_ms, skipped=p.skipped)
            for second, p in output.samples
        )  # fmt: skip
        RunArtifact.objects.bulk_create(
            RunArtifact(run=run, name=f"import.{file.kind}.{n}.txt", content=file.text)
            for n, file in enumerate(files, start=1)
        )
        RunTransition.objects.create(run=run, state=RunState.DONE, at=now, note="imported from uploaded pgbench output")
        names = ", ".join(file.name for file in files)
        audit_record(
            action=AuditAction.RUN_IMPORTED,
            target=run,
            actor=user,
            request=request,
            message=f"{run.server_host.name}:{run.device.name} {run.filesystem}, scale {run.scale}, "
            f"{run.clients} clients, {run.duration_s} s, from {names}"[:2000],
        )
    return run
