"""Seed 001's study queued after the builds it lacks (services.after_builds): which builds, the
wait, the campaign once every build is done, no campaign when one is not, refusals, the pages.
The host is not asked over SSH here (a unit test fakes that boundary); the real build and a
run on it are in test_build_lab.py."""

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from runs.lab.pg_build_options import SourceKind
from runs.models import BuildState, Campaign, Host, PgBuild, PgInstall, Run
from runs.models.studies import StudyAfterBuilds, StudyWaitState
from runs.presets import page_size_study
from runs.services import after_builds
from runs.services.after_builds import StudyRefused, studies_after_build_ended, study_after_builds_queue
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_user

pytestmark = pytest.mark.django_db
PACKAGE_VERSION = "15.20-0+deb12u1"


class NoConnection:
    def close(self) -> None:
        pass


@pytest.fixture
def host_says(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The host's installed versions of the source package, as dpkg-query would list them."""
    versions = [PACKAGE_VERSION]
    monkeypatch.setattr(after_builds, "host_connect", lambda host: NoConnection())
    monkeypatch.setattr(after_builds, "installed_versions", lambda connection, package: list(versions))
    return versions


def lab1() -> Host:
    host = make_host(name="lab1")
    make_device(host, name="ram", kind="ram", path="/dev/disk/by-id/ram-1", wipe_allowed=True,
                capacity_bytes=8 * 2**30)  # fmt: skip
    make_pg_install(host, version="15.20")
    return host


def finish(build: PgBuild, state: BuildState = BuildState.DONE) -> None:
    """What the build's worker leaves: done with a registered install, or ended otherwise."""
    install = None
    if state == BuildState.DONE:
        install = make_pg_install(build.host, bin_dir=f"{build.prefix}/bin", version=build.version,
                                  block_size=build.block_size_kb * 1024)  # fmt: skip
    PgBuild.objects.filter(pk=build.pk).update(state=state, pg_install=install)
    studies_after_build_ended(PgBuild.objects.get(pk=build.pk))


def test_the_missing_page_sizes_are_built_from_debians_source_of_the_packaged_release(host_says: list) -> None:
    host = lab1()
    otto = make_user("otto", "operator")

    wait = study_after_builds_queue(by=otto)

    builds = list(wait.builds.order_by("block_size_kb"))
    assert [b.block_size_kb for b in builds] == [2, 4]
    assert {(b.host, b.version, b.source_kind, b.package, b.package_version) for b in builds} == {
        (host, "15.20", SourceKind.DEBIAN, "postgresql-15", PACKAGE_VERSION)
    }
    assert wait.state == StudyWaitState.WAITING and wait.campaign is None and wait.created_by == otto
    assert not Campaign.objects.exists()


def test_once_every_build_is_done_the_preset_study_is_queued_with_every_page_size(host_says: list) -> None:
    lab1()
    wait = study_after_builds_queue(by=make_user("otto", "operator"))
    two_kb, four_kb = wait.builds.order_by("block_size_kb")

    finish(two_kb)
    assert StudyAfterBuilds.objects.get(pk=wait.pk).state == StudyWaitState.WAITING  # 4 kB still building
    finish(four_kb)

    wait.refresh_from_db()
    assert wait.state == StudyWaitState.QUEUED and wait.campaign is not None
    campaign = wait.campaign
    sizes = sorted(PgInstall.objects.get(pk=c.spec["pg_install_id"]).block_size for c in campaign.configurations.all())
    assert sizes == [2048, 4096, 8192]
    assert campaign.preset == "page-size" and campaign.repetitions == 10
    assert Run.objects.filter(campaign=campaign).count() == 30
    assert campaign.created_by is not None and campaign.created_by.username == "otto"


def test_a_build_that_fails_ends_the_wait_without_a_campaign(host_says: list) -> None:
    lab1()
    wait = study_after_builds_queue(by=make_user("otto", "operator"))
    two_kb, four_kb = wait.builds.order_by("block_size_kb")

    finish(two_kb, BuildState.FAILED)
    finish(four_kb)

    wait.refresh_from_db()
    assert wait.state == StudyWaitState.FAILED and wait.campaign is None
    assert f"build {two_kb.pk} (2 kB pages) failed" in wait.note
    assert not Campaign.objects.exists()


def test_builds_done_already_queue_the_study_at_once(host_says: list) -> None:
    lab1()
    first = study_after_builds_queue(by=make_user("otto", "operator"))
    for build in first.builds.all():
        finish(build)
    assert Campaign.objects.count() == 1
    with pytest.raises(StudyRefused, match="has every page size already"):
        study_after_builds_queue(by=make_user("oskar", "operator"))


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no package version", "has no postgresql-15 package of version 15.20 installed"),
        ("no packaged install", "has no Debian-packaged PostgreSQL"),
        # Arabic-Indic 15: no Debian directory, and never part of a package name on a command line.
        ("a major in other digits", "has no Debian-packaged PostgreSQL"),
        ("no host", "no enabled host serves PostgreSQL"),
    ],
)
def test_what_cannot_be_built_is_refused_with_the_reason_and_nothing_is_queued(
    host_says: list, setup: str, message: str
) -> None:
    if setup != "no host":
        host = lab1()
    if setup == "no package version":
        host_says[:] = ["15.19-0+deb12u1"]
    if setup == "no packaged install":
        PgInstall.objects.filter(host=host).update(bin_dir="/opt/pg/bin")
    if setup == "a major in other digits":
        PgInstall.objects.filter(host=host).update(bin_dir="/usr/lib/postgresql/\u0661\u0665/bin")

    with pytest.raises(StudyRefused, match=message):
        study_after_builds_queue(by=make_user("otto", "operator"))
    assert not PgBuild.objects.exists() and not StudyAfterBuilds.objects.exists()


def test_the_page_size_preset_offers_the_builds_and_the_button_queues_them(
    host_says: list, client_for: ClientFactory
) -> None:
    lab1()
    otto: Client = client_for("otto")

    form = otto.get(reverse("campaign-new"), {"preset": "page-size"}).content.decode()
    response = otto.post(reverse("study-after-builds-new"))
    viewer = client_for("vera").post(reverse("study-after-builds-new"))

    assert "lab1 has no install of PostgreSQL 15.20 with 2 kB and 4 kB pages." in form
    assert "Build 2 kB and 4 kB pages, then queue the study" in form
    wait = StudyAfterBuilds.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("study-after-builds", args=[wait.pk])
    page = otto.get(response["Location"]).content.decode()
    assert "Waiting for 2 builds" in page and "4 kB pages" in page
    assert viewer.status_code == 403 and StudyAfterBuilds.objects.count() == 1


def test_the_study_says_which_install_versions_it_uses(host_says: list) -> None:
    host = lab1()
    make_pg_install(host, bin_dir="/opt/pg4/bin", version="15.19", block_size=4096)  # another release: not used
    study: Any = page_size_study()
    assert study.version == "15.20" and study.missing == [2048, 4096]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_preset_form_offers_the_builds_and_the_study_page_follows_them(web_server: str) -> None:
    host = lab1()
    make_user("otto", "operator", password=PASSWORD)
    options = {"host": host, "version": "15.20", "source_kind": "debian", "package": "postgresql-15",
               "package_version": PACKAGE_VERSION}  # fmt: skip
    building = PgBuild.objects.create(**options, block_size_kb=2, key="a" * 12, prefix="/var/lib/benchlab/builds/a",
                                      state=BuildState.BUILDING, step="make", progress=41.5)  # fmt: skip
    queued = PgBuild.objects.create(**options, block_size_kb=4, key="b" * 12, prefix="/var/lib/benchlab/builds/b")
    wait = StudyAfterBuilds.objects.create(preset="page-size", host=host)
    wait.builds.set([building, queued])
    with chromium(height=900) as (context, violations):
        page = context.new_page()
        log_in(page, web_server, "otto")
        page.goto(f"{web_server}/campaigns/new/?preset=page-size")
        offer = " ".join((page.text_content("#build-first") or "").split())
        page.locator("#build-first").screenshot(path=str(ARTIFACTS / "page-size-preset-build-first.png"))
        page.goto(f"{web_server}/campaigns/after-builds/{wait.pk}/")
        waiting = " ".join((page.text_content("main") or "").split())
        page.screenshot(path=str(ARTIFACTS / "page-size-study-waiting.png"), full_page=True)

    assert "lab1 has no install of PostgreSQL 15.20 with 2 kB and 4 kB pages." in offer
    assert "Build 2 kB and 4 kB pages, then queue the study" in offer
    assert "Waiting for 2 builds" in waiting and "make · 42 %" in waiting and "queued" in waiting
    assert not violations, violations
