"""Seed 001's study in one click: the page sizes the chosen source has no build of on the chosen
host (8 kB included) are built from it with the study's flags (runs.campaigns.page_size_study), and the
campaign is queued as the user's form had it once every one of those builds is done.

A build that fails or is cancelled ends the wait: the study is not queued with a page size
missing, the page says why (the build's failed step and error), and the builds this study queued
that are still queued or running are cancelled (nothing compiles for a study that gave up).
"""

import logging

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from runs.builds.services import sources as build_sources
from runs.builds.services.builds import build_options_of, build_queue
from runs.builds.services.sources import SourcesUnknown
from runs.campaigns.page_size_study import PageSizeStudy, page_size_study, study_installs
from runs.campaigns.services.campaigns import CampaignRefused, campaign_create
from runs.jobs.cancel import JobRefused, job_cancel
from runs.models import BuildState, Host, PgBuild
from runs.models.studies import StudyAfterBuilds, StudyWaitState

log = logging.getLogger(__name__)
PRESET = "page-size"
UNSUCCESSFUL = (BuildState.FAILED, BuildState.CANCELLED, BuildState.REMOVED)


class StudyRefused(Exception):
    """The builds cannot be queued; str() says why, for the user to read."""


def study_of(host: Host, source_key: str) -> PageSizeStudy:
    """The study of that source on that host, as the host has it now; StudyRefused if the host
    cannot be asked or has no such source."""
    try:
        sources = build_sources.host_sources_read(host)  # by the module: tests replace it there
    except SourcesUnknown as exc:
        raise StudyRefused(str(exc)) from exc
    source = next((s for s in sources if s.key == source_key), None)
    if source is None:
        offered = ", ".join(s.key for s in sources) or "none"
        raise StudyRefused(f"{host.name} has no PostgreSQL source {source_key[:200]!r} (it has: {offered})")
    return page_size_study(host, source)


def study_after_builds_queue(
    *,
    by: AbstractBaseUser | AnonymousUser,
    host: Host,
    source_key: str,
    form_data: dict[str, list[str]] | None = None,
    request: HttpRequest | None = None,
) -> StudyAfterBuilds:
    """Queue (or find) the builds the study of `source_key` on `host` lacks, and the wait for
    them; the campaign (the preset's form, or `form_data` as the user edited it) is queued at once
    if every build was there already. StudyRefused, with nothing queued, otherwise."""
    study = study_of(host, source_key)
    if not study.missing:
        raise StudyRefused(f"{host.name} has every page size of {source_key} built already: queue the study itself")
    data = form_data if form_data is not None else study_form_data(host, source_key)
    if problems := _form_problems(data, study):
        raise StudyRefused("the study's form does not validate: " + "; ".join(problems))
    user = by if isinstance(by, User) else None
    try:
        with transaction.atomic():
            queued = [
                build_queue(host=host, options=study.options(size), by=user, request=request) for size in study.missing
            ]
            wait = StudyAfterBuilds.objects.create(
                preset=PRESET, host=host, source_key=source_key, form_data=data, created_by=user
            )
            wait.builds.set(build for build, _ in queued)
            wait.started_builds.set(build for build, now in queued if now)
    except ValidationError as exc:
        raise StudyRefused("; ".join(exc.messages)) from exc
    study_after_builds_advance(wait)
    return wait


def studies_after_build_ended(build: PgBuild) -> None:
    """A build ended: every study waiting for it may go on (or stop)."""
    for wait in StudyAfterBuilds.objects.filter(builds=build, state=StudyWaitState.WAITING):
        study_after_builds_advance(wait)


def study_after_builds_advance(wait: StudyAfterBuilds) -> None:
    """Queue the campaign once every build is done; give up, saying why and cancelling the
    builds it started, once one is not."""
    with transaction.atomic():
        wait = StudyAfterBuilds.objects.select_for_update().get(pk=wait.pk)
        if wait.state != StudyWaitState.WAITING:
            return  # another build's end got here first
        builds = list(wait.builds.order_by("block_size_kb"))
        if unsuccessful := [b for b in builds if b.state in UNSUCCESSFUL]:
            said = "; ".join(_why(build) for build in unsuccessful)
            note = f"{said}. The study was not queued: queue it again once every page size builds."
            if cancelled := _cancel_started(wait):
                note += f" Cancelled what this study had started: {cancelled}."
            _end(wait, StudyWaitState.FAILED, note)
        elif all(b.state == BuildState.DONE for b in builds):
            _queue_campaign(wait)


def _why(build: PgBuild) -> str:
    """ "build 7 (2 kB pages) failed in configure: <error>" """
    said = f"build {build.pk} ({build.block_size_kb} kB pages) {build.get_state_display()}"
    if build.failed_step:
        said += f" in {build.get_failed_step_display()}"
    return f"{said}: {build.error}" if build.error else said


def _cancel_started(wait: StudyAfterBuilds) -> str:
    """Cancel the builds this study queued that are still queued or running, as its user (who
    queued them); what was cancelled or could not be, in words."""
    by = wait.created_by or AnonymousUser()
    said = []
    for build in wait.started_builds.filter(state__in=[BuildState.QUEUED, BuildState.BUILDING]).order_by("pk"):
        was = build.get_state_display()
        try:
            job_cancel(build, by=by)
        except JobRefused as exc:
            said.append(f"build {build.pk} could not be cancelled ({exc})")
        else:
            wait.cancelled_builds.add(build)
            said.append(f"build {build.pk} ({build.block_size_kb} kB pages, was {was})")
    return ", ".join(said)


def study_form_data(host: Host, source_key: str) -> dict[str, list[str]]:
    """The preset's form for this host and source, as a browser would post it untouched."""
    from runs.campaigns.plans import form_data  # the plan reads forms, which import services
    from runs.campaigns.presets import preset_initial

    return form_data(preset_initial(PRESET, [host.pk], source_key))


def _with_installs(data: dict[str, list[str]], host: Host, installs: list[str]) -> dict[str, list[str]]:
    """The form on the study's host with its installs (ids, 8 kB last): the base the 8 kB one,
    every page size swept. What the user posted for these fields is not the study's to take."""
    return data | {"base-server_host": [str(host.pk)], "base-pg_install": installs[-1:], "pg_install": installs}


def _form_problems(data: dict[str, list[str]], study: PageSizeStudy) -> list[str]:
    """What is wrong with the form, checked with the installs there are (the others do not exist
    yet, so a complaint about the installs is not one)."""
    from runs.campaigns.plans import plan_problems

    problems = plan_problems(_with_installs(data, study.host, [str(pg.pk) for pg in study.installs]))
    return [p for p in problems if not p.startswith("pg_install:")]


def _queue_campaign(wait: StudyAfterBuilds) -> None:
    from runs.campaigns.plans import PresetInvalid, plan_from_data

    try:
        installs = _installs_now(wait)
        data = wait.form_data or study_form_data(wait.host, wait.source_key)
        plan = plan_from_data(_with_installs(data, wait.host, installs), PRESET)
        campaign = campaign_create(plan=plan, by=wait.created_by or AnonymousUser())
    except (StudyRefused, PresetInvalid, CampaignRefused) as exc:
        _end(wait, StudyWaitState.FAILED, f"the builds are done, but the study could not be queued: {exc}")
        return
    wait.campaign = campaign
    _end(wait, StudyWaitState.QUEUED, "")


def _installs_now(wait: StudyAfterBuilds) -> list[str]:
    """The study's installs (ids, by page size): every page size built like the builds it waited
    for (one source, the same flags), 8 kB last (the base)."""
    template = build_options_of(wait.builds.order_by("pk")[0])
    found = study_installs(wait.host, template)
    if missing := [f"{size // 1024} kB" for size, pg in found.items() if pg is None]:
        raise StudyRefused(f"{wait.host.name} has no install of {', '.join(missing)} pages of that source any more")
    return [str(pg.pk) for pg in found.values() if pg is not None]


def _end(wait: StudyAfterBuilds, state: StudyWaitState, note: str) -> None:
    wait.state, wait.note = state, note
    wait.save(update_fields=["state", "note", "campaign"])
    log.info("study %s after builds: %s %s", wait.pk, state, note)
