"""Seed 001's study in one click: the page sizes its host has no install of are built first, and
the campaign is queued once every one of those builds is done (or not at all, saying why).

The study is the preset's as it stands then (runs.presets: one install per page size, of one
version), so it picks up the installs the builds registered. A build that fails or is cancelled
ends the wait: the study is not queued with a page size missing.
"""

import logging
import re

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from runs.lab.errors import LabError
from runs.lab.pg_build_options import BuildOptions, BuildSource, SourceKind, debian_upstream_version
from runs.lab.pg_build_source import installed_versions
from runs.models import BuildState, PgBuild
from runs.models.studies import StudyAfterBuilds, StudyWaitState
from runs.presets import PageSizeStudy, page_size_study
from runs.services.builds import build_queue
from runs.services.campaigns import CampaignRefused, campaign_create
from runs.services.lab_access import host_connect

log = logging.getLogger(__name__)
PRESET = "page-size"
_PACKAGED_BIN = re.compile(r"/usr/lib/postgresql/([0-9]+)/bin")  # Debian's layout: package postgresql-<major>


class StudyRefused(Exception):
    """The builds cannot be queued; str() says why, for the user to read."""


def page_size_builds(study: PageSizeStudy) -> list[BuildOptions]:
    """A build of Debian's source of the host's packaged PostgreSQL per missing page size (the
    same release as its 8 kB install: the page size is then all that differs). Asks the host
    which package version is installed: StudyRefused if it cannot say."""
    packaged = [pg for pg in study.installs if _PACKAGED_BIN.fullmatch(pg.bin_dir) and pg.version == study.version]
    if not packaged:
        raise StudyRefused(
            f"{study.host.name} has no Debian-packaged PostgreSQL {study.version or ''} to build other page sizes "
            "of: queue the builds from a source tarball on the Builds page"
        )
    package = f"postgresql-{_PACKAGED_BIN.fullmatch(packaged[0].bin_dir).group(1)}"  # type: ignore[union-attr]
    try:
        connection = host_connect(study.host)
        try:
            versions = installed_versions(connection, package)
        finally:
            connection.close()
    except LabError as exc:
        raise StudyRefused(f"could not ask {study.host.name} which {package} it has: {exc}") from exc
    matching = [v for v in versions if debian_upstream_version(v) == study.version]
    if not matching:
        raise StudyRefused(f"{study.host.name} has no {package} package of version {study.version} installed")
    source = BuildSource(SourceKind.DEBIAN, package=package, package_version=matching[-1])
    return [
        BuildOptions(version=study.version or "", source=source, block_size_kb=size // 1024) for size in study.missing
    ]


def study_after_builds_queue(
    *, by: AbstractBaseUser | AnonymousUser, request: HttpRequest | None = None
) -> StudyAfterBuilds:
    """Queue (or find) the builds the page-size study lacks and the wait for them; the campaign
    is queued at once if nothing is missing or every build was there already."""
    study = page_size_study()
    if study is None:
        raise StudyRefused("no enabled host serves PostgreSQL: add one in the inventory first")
    if not study.missing:
        raise StudyRefused(f"{study.host.name} has every page size already: queue the study itself")
    options = page_size_builds(study)
    user = by if isinstance(by, User) else None
    try:
        with transaction.atomic():
            builds = [build_queue(host=study.host, options=o, by=user, request=request)[0] for o in options]
            wait = StudyAfterBuilds.objects.create(preset=PRESET, host=study.host, created_by=user)
            wait.builds.set(builds)
    except ValidationError as exc:
        raise StudyRefused("; ".join(exc.messages)) from exc
    study_after_builds_advance(wait)
    return wait


def studies_after_build_ended(build: PgBuild) -> None:
    """A build ended: every study waiting for it may go on (or stop)."""
    for wait in StudyAfterBuilds.objects.filter(builds=build, state=StudyWaitState.WAITING):
        study_after_builds_advance(wait)


def study_after_builds_advance(wait: StudyAfterBuilds) -> None:
    """Queue the campaign once every build is done; give up, saying why, once one is not."""
    with transaction.atomic():
        wait = StudyAfterBuilds.objects.select_for_update().get(pk=wait.pk)
        if wait.state != StudyWaitState.WAITING:
            return  # another build's end got here first
        builds = list(wait.builds.order_by("block_size_kb"))
        unsuccessful = [b for b in builds if b.state in (BuildState.FAILED, BuildState.CANCELLED, BuildState.REMOVED)]
        if unsuccessful:
            said = "; ".join(f"build {b.pk} ({b.block_size_kb} kB pages) {b.get_state_display()}" for b in unsuccessful)
            _end(wait, StudyWaitState.FAILED, f"{said}: the study was not queued. Queue it again once they build.")
        elif all(b.state == BuildState.DONE for b in builds):
            _queue_campaign(wait)


def _queue_campaign(wait: StudyAfterBuilds) -> None:
    from runs.campaign_plans import PresetInvalid, preset_plan  # the plan reads forms, which import services

    try:
        campaign = campaign_create(plan=preset_plan(wait.preset, [wait.host_id]), by=wait.created_by or AnonymousUser())
    except (PresetInvalid, CampaignRefused) as exc:
        _end(wait, StudyWaitState.FAILED, f"the builds are done, but the study could not be queued: {exc}")
        return
    wait.campaign = campaign
    _end(wait, StudyWaitState.QUEUED, "")


def _end(wait: StudyAfterBuilds, state: StudyWaitState, note: str) -> None:
    wait.state, wait.note = state, note
    wait.save(update_fields=["state", "note", "campaign"])
    log.info("study %s after builds: %s %s", wait.pk, state, note)
