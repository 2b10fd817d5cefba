"""Seed 001's study queued after the builds it lacks (campaigns.services.after_builds, runs.campaigns.page_size_study):
every page size, 8 kB included, built from the chosen source with the same flags; the packaged
PostgreSQL never in it; the campaign as the user's form had it once every build is done; no
campaign when one fails, with the reason, and the study's other builds cancelled; refusals; the
pages. The host is not asked over SSH here (its sources are faked); the real builds and the
study on them are in test_page_size_lab.py."""

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs.builds.services import sources as build_sources
from runs.builds.services.sources import SourcesUnknown
from runs.campaigns.page_size_study import page_size_choice, page_size_study
from runs.campaigns.services import after_builds
from runs.campaigns.services.after_builds import (
    StudyRefused,
    studies_after_build_ended,
    study_after_builds_queue,
    study_form_data,
)
from runs.lab.pgbuild.options import SourceKind, build_prefix
from runs.lab.pgbuild.sources import HostSource
from runs.models import BuildState, Campaign, Host, PgBuild, PgInstall, Run
from runs.models.studies import StudyAfterBuilds, StudyWaitState
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_user

pytestmark = pytest.mark.django_db
DEBIAN = HostSource(SourceKind.DEBIAN, "15.18", "a" * 64, "postgresql-15_15.18.orig.tar.bz2", "postgresql-15",
                    "15.18-0+deb12u1")  # fmt: skip
TARBALL = HostSource(SourceKind.TARBALL, "15.17", "b" * 64, "postgresql-15.17.tar.bz2")
SHORT = {"base-duration_s": ["2"], "base-warmup_s": ["0"], "base-scale": ["1"]}  # as a user edits the form


@pytest.fixture
def host_has(monkeypatch: pytest.MonkeyPatch) -> list[HostSource]:
    """The sources the host lists (runs.lab.pgbuild.sources), as host_sources_read would return them."""
    sources = [DEBIAN, TARBALL]

    def read(host: Host) -> list[HostSource]:
        if not sources:
            raise SourcesUnknown(f"could not ask {host.name} which PostgreSQL sources it has: timed out")
        return list(sources)

    monkeypatch.setattr(build_sources, "host_sources_read", read)
    return sources


def lab1() -> Host:
    """lab1 with a RAM device and Debian's packaged 15.20 (8 kB): never part of the study."""
    host = make_host(name="lab1")
    make_device(host, name="ram", kind="ram", path="/dev/disk/by-id/ram-1", wipe_allowed=True,
                capacity_bytes=8 * 2**30)  # fmt: skip
    make_pg_install(host, version="15.20")
    return host


def finish(build: PgBuild, state: BuildState = BuildState.DONE, **fields: Any) -> None:
    """What the build's worker leaves: done with a registered install, or ended otherwise."""
    install = None
    if state == BuildState.DONE:
        install = make_pg_install(build.host, bin_dir=f"{build.prefix}/bin", version=build.version,
                                  block_size=build.block_size_kb * 1024)  # fmt: skip
    PgBuild.objects.filter(pk=build.pk).update(state=state, pg_install=install, **fields)
    studies_after_build_ended(PgBuild.objects.get(pk=build.pk))


def queue(host: Host, source: HostSource = DEBIAN, **kwargs: Any) -> StudyAfterBuilds:
    return study_after_builds_queue(by=make_user("otto", "operator"), host=host, source_key=source.key, **kwargs)


def test_every_page_size_8_kb_too_is_built_from_the_chosen_source_with_the_same_flags(host_has: list) -> None:
    host = lab1()

    wait = queue(host)

    builds = list(wait.builds.order_by("block_size_kb"))
    assert [b.block_size_kb for b in builds] == [2, 4, 8]
    assert {(b.host, b.version, b.source_kind, b.package, b.package_version) for b in builds} == {
        (host, "15.18", SourceKind.DEBIAN, "postgresql-15", "15.18-0+deb12u1")
    }
    assert {(tuple(b.configure_flags), b.wal_block_size_kb, b.segment_size_gb) for b in builds} == {((), 8, 1)}
    assert set(wait.started_builds.all()) == set(builds) and wait.source_key == DEBIAN.key
    assert wait.state == StudyWaitState.WAITING and wait.campaign is None
    assert not Campaign.objects.exists()


def test_once_every_build_is_done_the_study_is_queued_on_exactly_those_builds_as_the_form_was_edited(
    host_has: list,
) -> None:
    host = lab1()
    elsewhere = make_host(name="lab2", address="10.200.0.12")  # the form's host changed: not the study's to take
    wait = queue(host, form_data=study_form_data(host, DEBIAN.key) | SHORT | {"base-server_host": [str(elsewhere.pk)]})
    two_kb, four_kb, eight_kb = wait.builds.order_by("block_size_kb")
    finish(two_kb)
    finish(four_kb)
    assert StudyAfterBuilds.objects.get(pk=wait.pk).state == StudyWaitState.WAITING  # 8 kB still building
    finish(eight_kb)

    wait.refresh_from_db()
    assert wait.state == StudyWaitState.QUEUED and wait.campaign is not None
    campaign = wait.campaign
    installs = [PgInstall.objects.get(pk=c.spec["pg_install_id"]) for c in campaign.configurations.all()]
    assert sorted(pg.block_size for pg in installs) == [2048, 4096, 8192]
    assert {pg.pk for pg in installs} == {b.pg_install_id for b in wait.builds.all()}
    assert not any(pg.bin_dir.startswith("/usr/lib/postgresql") for pg in installs)  # never the packaged one
    spec = campaign.configurations.first().spec  # type: ignore[union-attr]
    assert (spec["workload"], spec["query_mode"], spec["clients"]) == ("simple-update", "prepared", 4)
    assert (spec["duration_s"], spec["scale"]) == (2, 1)  # the user's edits
    assert {c.spec["server_host_id"] for c in campaign.configurations.all()} == {host.pk}
    assert campaign.preset == "page-size" and campaign.repetitions == 10
    assert Run.objects.filter(campaign=campaign).count() == 30


def test_builds_of_that_source_there_already_are_used_and_others_are_not(host_has: list) -> None:
    host = lab1()
    eight_kb = page_size_study(host, DEBIAN).options(8192)
    make_pg_install(host, bin_dir=f"{build_prefix(eight_kb)}/bin", version="15.18", block_size=8192)
    two_kb = page_size_study(host, DEBIAN).options(2048)  # a probe found it gone: built again
    make_pg_install(host, bin_dir=f"{build_prefix(two_kb)}/bin", version="15.18", block_size=2048,
                    missing_since=timezone.now())  # fmt: skip
    # The same page size from another source, and another release's 4 kB: not this study's.
    make_pg_install(host, bin_dir=f"{build_prefix(page_size_study(host, TARBALL).options(4096))}/bin",
                    version="15.17", block_size=4096)  # fmt: skip

    wait = queue(host)

    assert [b.block_size_kb for b in wait.builds.order_by("block_size_kb")] == [2, 4]


def test_a_build_that_fails_ends_the_wait_saying_why_and_cancels_the_builds_the_study_started(
    host_has: list,
) -> None:
    host = lab1()
    earlier, _ = after_builds.build_queue(host=host, options=page_size_study(host, DEBIAN).options(8192), by=None)
    wait = queue(host)
    two_kb, four_kb, eight_kb = wait.builds.order_by("block_size_kb")
    assert eight_kb == earlier and set(wait.started_builds.all()) == {two_kb, four_kb}
    PgBuild.objects.filter(pk=four_kb.pk).update(state=BuildState.BUILDING)

    finish(two_kb, BuildState.FAILED, failed_step="configure", error="configure: error: readline library not found")

    wait.refresh_from_db()
    assert wait.state == StudyWaitState.FAILED and wait.campaign is None
    assert (
        f"build {two_kb.pk} (2 kB pages) failed in configure: configure: error: readline library not found" in wait.note
    )
    assert f"Cancelled what this study had started: build {four_kb.pk} (4 kB pages, was building)" in wait.note
    # The building one is asked to stop (its worker stops it); the one queued before the study is not touched.
    assert PgBuild.objects.get(pk=four_kb.pk).cancel_requested and list(wait.cancelled_builds.all()) == [four_kb]
    assert PgBuild.objects.get(pk=eight_kb.pk).state == BuildState.QUEUED
    assert not PgBuild.objects.get(pk=eight_kb.pk).cancel_requested
    assert not Campaign.objects.exists()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("another source", "lab1 has no PostgreSQL source 'tarball:postgresql-9.9.tar.gz' (it has: debian:"),
        ("host cannot be asked", "could not ask lab1 which PostgreSQL sources it has: timed out"),
        ("every page size built", "lab1 has every page size of debian:postgresql-15=15.18-0+deb12u1 built already"),
        ("a form that does not validate", "the study's form does not validate: duration_s:"),
    ],
)
def test_what_cannot_be_built_is_refused_with_the_reason_and_nothing_is_queued(
    host_has: list, setup: str, message: str
) -> None:
    host = lab1()
    kwargs: dict[str, Any] = {}
    if setup == "another source":
        kwargs["source"] = HostSource(SourceKind.TARBALL, "9.9", "c" * 64, "postgresql-9.9.tar.gz")
    if setup == "host cannot be asked":
        host_has.clear()
    if setup == "every page size built":
        for size in (2048, 4096, 8192):
            options = page_size_study(host, DEBIAN).options(size)
            make_pg_install(host, bin_dir=f"{build_prefix(options)}/bin", version="15.18", block_size=size)
    if setup == "a form that does not validate":
        kwargs["form_data"] = study_form_data(host, DEBIAN.key) | {"base-duration_s": ["0"]}

    with pytest.raises(StudyRefused, match=re.escape(message)):
        queue(host, **kwargs)
    assert not PgBuild.objects.exists() and not StudyAfterBuilds.objects.exists()


def test_the_preset_offers_the_hosts_sources_and_builds_from_the_one_chosen(
    host_has: list, client_for: ClientFactory
) -> None:
    host = lab1()
    otto: Client = client_for("otto")

    default = otto.get(reverse("campaign-new"), {"preset": "page-size"}).content.decode()
    chosen = otto.get(reverse("campaign-new"), {"preset": "page-size", "host": str(host.pk), "source": TARBALL.key})
    wrong = otto.get(reverse("campaign-new"), {"preset": "page-size", "host": str(host.pk), "source": "debian:x=1"})
    bad_host = otto.get(reverse("campaign-new"), {"preset": "page-size", "host": "999"})
    form = {"preset": "page-size", "host": str(host.pk), "source": TARBALL.key}
    previewed = otto.post(reverse("campaign-new"), form | study_form_data(host, TARBALL.key) | {"action": "preview"})
    response = otto.post(reverse("study-after-builds-new"), form | study_form_data(host, TARBALL.key) | SHORT)
    viewer = client_for("vera").post(reverse("study-after-builds-new"), form)

    # Without a choice: the newest source; it is offered with the other, with its checksum.
    assert f'<option value="{DEBIAN.key}" selected>{DEBIAN.label} (SHA-256 aaaaaaaaaaaa…)</option>' in default
    assert f'<option value="{TARBALL.key}">' in default
    assert "Build 2 kB, 4 kB and 8 kB pages, then queue this study" in default
    assert 'name="base-pg_install"' in default and "/usr/lib/postgresql/15/bin" not in default.split("<form")[2]
    assert f'<option value="{TARBALL.key}" selected>' in chosen.content.decode()
    assert "lab1 has no source &#x27;debian:x=1&#x27;: choose one of" in wrong.content.decode()
    assert "Build 2 kB" not in wrong.content.decode()
    # A preview keeps the choice and the offer (nothing is built yet, so there is no install to preview).
    assert "Build 2 kB, 4 kB and 8 kB pages, then queue this study" in previewed.content.decode()
    assert f'<option value="{TARBALL.key}" selected>' in previewed.content.decode()
    assert "No build of 2 kB, 4 kB and 8 kB pages from PostgreSQL 15.17: release tarball" in previewed.content.decode()
    assert "This field is required" not in previewed.content.decode()
    assert bad_host.status_code == 400 and "No host has id 999. Hosts that can: lab1." in bad_host.content.decode()
    wait = StudyAfterBuilds.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("study-after-builds", args=[wait.pk])
    assert wait.source_key == TARBALL.key and wait.form_data["base-duration_s"] == ["2"]
    assert {b.sha256 for b in wait.builds.all()} == {"b" * 64}
    page = otto.get(response["Location"]).content.decode()
    assert "Waiting for 3 builds" in page and "8 kB pages" in page
    assert viewer.status_code == 403 and StudyAfterBuilds.objects.count() == 1


def test_with_every_page_size_built_the_preset_previews_them_and_only_them(
    host_has: list, client_for: ClientFactory
) -> None:
    host = lab1()
    built = [
        make_pg_install(
            host,
            bin_dir=f"{build_prefix(page_size_study(host, DEBIAN).options(size))}/bin",
            version="15.18",
            block_size=size,
        )
        for size in (2048, 4096, 8192)
    ]
    otto: Client = client_for("otto")

    shown = otto.get(reverse("campaign-new"), {"preset": "page-size", "host": str(host.pk), "source": DEBIAN.key})
    data = study_form_data(host, DEBIAN.key) | {"action": "preview", "preset": "page-size"}
    preview = otto.post(reverse("campaign-new"), data).content.decode()

    assert "every page size is built." in shown.content.decode() and "Build 2 kB" not in shown.content.decode()
    assert data["pg_install"] == [str(pg.pk) for pg in built] and data["base-pg_install"] == [str(built[-1].pk)]
    assert "Queue 30 runs" in preview


def test_the_choice_says_when_the_host_has_no_source(host_has: list) -> None:
    host = lab1()
    host_has.clear()
    choice = page_size_choice(host)
    assert choice.study is not None and choice.study.source is None and choice.sources == []
    assert choice.problem == "could not ask lab1 which PostgreSQL sources it has: timed out"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_preset_form_offers_the_sources_and_the_study_page_says_why_a_build_failed(web_server: str) -> None:
    # The web server is another process: the host is this machine, whose real sources it lists
    # (the cached Debian source scripts/fetch-pg-source fetched).
    host = make_host(name="here", transport=Host.Transport.LOCAL, address="", private_key_path="",
                     allow_runs_on_benchlab_server=True)  # fmt: skip
    make_device(host, name="ram", kind="ram", path="/dev/disk/by-id/ram-1", wipe_allowed=True,
                capacity_bytes=8 * 2**30)  # fmt: skip
    make_pg_install(host, version="15.20")
    otto = make_user("otto", "operator", password=PASSWORD)
    options = {"host": host, "version": "15.18", "source_kind": "debian", "package": "postgresql-15",
               "package_version": "15.18-0+deb12u1"}  # fmt: skip
    failed = PgBuild.objects.create(**options, block_size_kb=2, key="a" * 12, prefix="/var/lib/benchlab/builds/a",
                                    state=BuildState.FAILED, failed_step="make",
                                    error="make exited with status 2: cc1: out of memory")  # fmt: skip
    cancelled = PgBuild.objects.create(**options, block_size_kb=4, key="b" * 12, prefix="/var/lib/benchlab/builds/b",
                                       queued_by=otto)  # fmt: skip
    done = PgBuild.objects.create(**options, block_size_kb=8, key="c" * 12, prefix="/var/lib/benchlab/builds/c",
                                  state=BuildState.DONE)  # fmt: skip
    wait = StudyAfterBuilds.objects.create(preset="page-size", host=host, source_key=DEBIAN.key, created_by=otto)
    wait.builds.set([failed, cancelled, done])
    wait.started_builds.set([failed, cancelled])
    after_builds.study_after_builds_advance(wait)  # the failed build ends the wait
    with signed_in(web_server, "otto", "/campaigns/new/?preset=page-size", height=1000) as (page, violations, _errors):
        page.select_option("#page-size-source-choice", DEBIAN.key)
        page.click("#page-size-choose")  # a GET: no JavaScript needed
        chosen_url = page.url
        offer = " ".join((page.text_content("main") or "").split())
        page.screenshot(path=str(ARTIFACTS / "page-size-preset-source.png"), full_page=False)
        page.locator("#campaign-form .actions").screenshot(path=str(ARTIFACTS / "page-size-preset-build-first.png"))
        page.goto(f"{web_server}/campaigns/after-builds/{wait.pk}/")
        failure = " ".join((page.text_content("#study-note") or "").split())
        table = " ".join((page.text_content("#study-builds") or "").split())
        link = page.get_attribute(f"#build-failure-{failed.pk} a", "href")
        page.screenshot(path=str(ARTIFACTS / "page-size-study-failed.png"), full_page=True)

    assert f"source={DEBIAN.key.replace(':', '%3A').replace('=', '%3D').replace('+', '%2B')}" in chosen_url
    assert f"On here from {DEBIAN.label}: no build yet of 2 kB, 4 kB and 8 kB pages." in offer
    assert "Build 2 kB, 4 kB and 8 kB pages, then queue this study" in offer
    assert f"build {failed.pk} (2 kB pages) failed in make: make exited with status 2: cc1: out of memory" in failure
    assert f"Build {failed.pk} (2 kB pages) failed in make: its page has the step's output." in failure
    assert link == f"/builds/{failed.pk}/"
    assert f"Cancelled what this study had started: build {cancelled.pk} (4 kB pages, was queued)." in failure
    assert "cc1: out of memory" in table and "cancelled by this study when it gave up" in table
    assert not violations, violations
