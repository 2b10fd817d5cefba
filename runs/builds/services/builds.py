"""Writes to PostgreSQL builds: queue one (or find the same build), move it through its states.
Cancelling one is runs.jobs.cancel; removing a done build, builds.services.remove; running one,
builds.services.execute.

A build is asked for with the lab layer's BuildOptions and validated by it
(runs/lab/pg_build_options): nothing the options do not allow reaches a host, and its source is
checked against what the host has (builds.services.sources) before anything is queued: the page,
the API and the page-size study all come through build_queue, so all refuse alike. Builds are cached
per host by the options' key: a done, queued or running build of the same key on the same host
is the answer to a second request, and a partial unique index keeps two requests racing from
making two.
"""

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.http import HttpRequest

from runs.builds.services import sources as build_sources
from runs.common.roles import owner_refusal
from runs.common.services.audit import audit_record
from runs.jobs.dispatch import queue_on_commit
from runs.lab.pgbuild.options import (
    BuildOptions,
    BuildSource,
    SourceKind,
    build_key,
    build_option_errors,
    build_prefix,
)
from runs.lab.pgbuild.sources import HostSource
from runs.models import LIVE_BUILD_STATES, AuditAction, BuildState, Host, PgBuild

log = logging.getLogger(__name__)


def build_options_of(build: PgBuild) -> BuildOptions:
    """The lab layer's options of a build, as it was asked."""
    source = BuildSource(
        kind=SourceKind(build.source_kind),
        package=build.package,
        package_version=build.package_version,
        tarball_path=build.tarball_path,
        sha256=build.sha256,
        tarball_dir=settings.PG_TARBALL_DIR,
    )
    return BuildOptions(
        version=build.version,
        source=source,
        block_size_kb=build.block_size_kb,
        wal_block_size_kb=build.wal_block_size_kb,
        segment_size_gb=build.segment_size_gb,
        configure_flags=tuple(build.configure_flags),
    )


def build_fields(options: BuildOptions) -> dict[str, Any]:
    """The build's columns for these options (the inverse of build_options_of)."""
    source = options.source
    return {
        "version": options.version,
        "source_kind": str(source.kind),
        "package": source.package,
        "package_version": source.package_version,
        "tarball_path": source.tarball_path,
        "sha256": source.sha256,
        "block_size_kb": options.block_size_kb,
        "wal_block_size_kb": options.wal_block_size_kb,
        "segment_size_gb": options.segment_size_gb,
        "configure_flags": sorted(options.configure_flags),
    }


def build_host_refusal(host: Host) -> str | None:
    """Why no build may be queued on this host now (a run's reasons), or None."""
    if not host.enabled:
        return f"{host.name} is disabled in the inventory: it takes no new builds (an admin enables it)."
    return host.own_server_refusal()


def live_build(host: Host, key: str) -> PgBuild | None:
    """The queued, running or done build of this key on this host, if there is one."""
    return PgBuild.objects.filter(host=host, key=key, state__in=LIVE_BUILD_STATES).select_related("host").first()


def build_queue(
    *,
    host: Host,
    options: BuildOptions,
    by: Any,
    request: HttpRequest | None = None,
    sources: Sequence[HostSource] | None = None,
) -> tuple[PgBuild, bool]:
    """Queue a build of `options` on `host` for `by`, or find the same one: (the build, whether
    it was queued now). A done build of the same options is the answer as it is (nothing is
    built again); so is one queued or building. Bad options, a host that takes no builds or a
    source the host does not have (`sources`, what it has, as the caller just read it; asked of
    the host when not given) raise ValidationError, field by field, and nothing is created."""
    errors = dict(build_option_errors(options))
    if options.source.kind == SourceKind.TARBALL and options.source.tarball_dir != settings.PG_TARBALL_DIR:
        errors.setdefault("tarball_path", f"tarball: builds take tarballs only from {settings.PG_TARBALL_DIR}")
    if refusal := build_host_refusal(host):
        errors["host"] = refusal
    if errors:
        raise ValidationError(errors)
    options = _source_checked(host, options, sources)
    key = build_key(options)
    if existing := live_build(host, key):
        return existing, False
    try:
        with transaction.atomic():
            build = PgBuild.objects.create(
                host=host, key=key, prefix=build_prefix(options), queued_by=by, **build_fields(options)
            )
            audit_record(
                action=AuditAction.INVENTORY_ADDED,
                target=build,
                actor=by,
                request=request,
                message=f"build queued on {host.name}: {build.summary}, from {build.source_text}",
            )
            queue_on_commit(build, BuildState.QUEUED)
    except IntegrityError:
        # The same options were queued on this host a moment ago, by another request.
        if existing := live_build(host, key):
            return existing, False
        raise
    return build, True


def _source_checked(host: Host, options: BuildOptions, sources: Sequence[HostSource] | None) -> BuildOptions:
    """The options with their source as the host has it (a tarball pinned to the checksum found
    there, so one swapped before the build is refused at its SOURCE step); ValidationError on
    "source" when the host lacks it or could not be asked."""
    try:
        listed = build_sources.host_sources_read(host) if sources is None else sources
    except build_sources.SourcesUnknown as exc:
        raise ValidationError({"source": f"{exc}; nothing was queued: try again once it answers"}) from exc
    if refusal := build_sources.source_refusal(host, options, listed):
        raise ValidationError({"source": refusal})
    found = build_sources.source_found(options, listed)
    assert found is not None  # source_refusal says so otherwise
    return dataclasses.replace(options, source=found.build_source(settings.PG_TARBALL_DIR))


class BuildRefused(Exception):
    """The user may not do this to the build, or it cannot be done now; str() says why."""


def build_refusal(user: Any, build: PgBuild, doing: str) -> str | None:
    """Why `user` may not remove (`doing`, as builds.services.remove does) `build`, or None:
    operators their own builds, admins anybody's (cancelling is runs.jobs.cancel's)."""
    return owner_refusal(user, build.queued_by, "build", doing)
