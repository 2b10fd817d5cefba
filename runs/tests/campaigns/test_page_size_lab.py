"""Seed 001's page-size study end to end on the virtual lab, through a real Celery worker: 2, 4 and
8 kB pages built on lab1 from the cached Debian source (postgresql-15 15.18, which lab1 has in its
source cache, not installed) with the same flags, the study queued from the preset's form through
the button's view (`-N -M prepared`, 10 repetitions as the seed), and the campaign page showing a
row per page size with tps statistics.

The first compile takes about five minutes per page size on this machine; lab1's BUILDS_ROOT is
kept between sessions (test_pg_build_lab's `lab1` fixture), so later sessions find the builds by
their keys and compile nothing. To keep the suite short the form is edited as a user may (3 s runs
at scale 1 on the RAM disk), two interleaved rounds run, and the rest is cancelled.
"""

import csv
import io
import re
import statistics
import time

import pytest
from django.test import Client
from django.urls import reverse

from runs.campaigns.page_size_study import PAGE_SIZES_STUDIED, study_options
from runs.campaigns.services.after_builds import study_form_data
from runs.campaigns.services.campaigns import campaign_cancel
from runs.lab.pgbuild.options import build_prefix
from runs.lab.pgbuild.sources import HostSource
from runs.lab.transport.ssh import SSHTransport
from runs.models import BuildState, Host, PgInstall, Run, RunState
from runs.models.studies import StudyAfterBuilds, StudyWaitState
from runs.tests.bench.test_run_execution import lab_inventory
from runs.tests.builds.test_build_lab import FIRST_BUILD_S
from runs.tests.builds.test_pg_build_lab import lab1
from runs.tests.compare.test_results_table import table_in
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN
from runs.tests.waits import refreshed_until
from runs.tests.workers import CeleryWorker

__all__ = ["lab1", "lab_inventory"]  # fixtures, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
CACHED = "debian:postgresql-15=15.18-0+deb12u1"  # scripts/fetch-pg-source puts it in the cache
ROUNDS = 2


def test_the_page_size_study_builds_2_4_and_8_kb_from_one_source_and_compares_them(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], lab1: SSHTransport
) -> None:
    host = lab_inventory["lab1"]
    page = Client()
    otto = make_user("otto", "operator")
    page.force_login(otto)
    # Registering the lab probed lab1, whose kept builds (earlier sessions') it found: forget them,
    # so the study builds them through the worker as on a machine that never had them (a kept
    # build is found by its key and registered without compiling).
    source = next(s for s in page_size_sources(page, host) if s.key == CACHED)
    prefixes = [f"{build_prefix(study_options(source, size))}/bin" for size in PAGE_SIZES_STUDIED]
    PgInstall.objects.filter(host=host, bin_dir__in=prefixes).delete()

    form = page.get(reverse("campaign-new"), {"preset": "page-size", "host": str(host.pk), "source": CACHED})
    shown = form.content.decode()
    assert "Build 2 kB, 4 kB and 8 kB pages, then queue this study" in shown, shown
    # What the browser posts: the preset's form as shown, edited as a user would to keep it short.
    data = study_form_data(host, CACHED) | {
        "base-duration_s": ["3"],
        "base-warmup_s": ["0"],
        "base-scale": ["1"],
        "base-device": [str(host.devices.get(name="ram").pk)],
    }
    assert data["base-workload"] == ["simple-update"] and data["base-query_mode"] == ["prepared"]
    assert data["repetitions"] == ["10"] and data["base-clients"] == ["4"]
    started = time.monotonic()
    response = page.post(
        reverse("study-after-builds-new"), {"preset": "page-size", "host": str(host.pk), "source": CACHED} | data
    )
    assert response.status_code == 302, response.content.decode()
    wait = StudyAfterBuilds.objects.get()

    wait = refreshed_until(wait, lambda w: w.state != StudyWaitState.WAITING, 3 * FIRST_BUILD_S, "ended", interval=1)
    builds = list(wait.builds.order_by("block_size_kb"))
    for build in builds:
        took = (build.finished_at - build.started_at).total_seconds() if build.finished_at and build.started_at else 0
        print(f"\nbuild {build.pk}, {build.block_size_kb} kB: {build.state}, reused={build.reused}, {took:.0f} s")
    print(f"builds done and study queued after {time.monotonic() - started:.0f} s")
    assert wait.state == StudyWaitState.QUEUED, (wait.note, [(b.error, b.failed_output) for b in builds])
    assert [b.block_size_kb for b in builds] == [2, 4, 8] and {b.state for b in builds} == {BuildState.DONE}
    assert {(b.package, b.package_version, tuple(b.configure_flags)) for b in builds} == {
        ("postgresql-15", "15.18-0+deb12u1", ())
    }
    campaign = wait.campaign
    assert campaign is not None and campaign.repetitions == 10 and campaign.preset == "page-size"
    installs = {c.spec["pg_install_id"] for c in campaign.configurations.all()}
    assert installs == {b.pg_install_id for b in builds}
    assert not PgInstall.objects.filter(pk__in=installs, bin_dir=PG_BIN).exists()  # never the packaged one

    # Two interleaved rounds, then the rest is cancelled.
    runs = Run.objects.filter(campaign=campaign)
    deadline = time.monotonic() + 900
    while runs.filter(state__in=[RunState.DONE, RunState.FAILED]).count() < ROUNDS * 3:
        assert time.monotonic() < deadline, list(runs.values_list("state", "error"))
        time.sleep(1)
    campaign_cancel(campaign=campaign, by=otto)
    deadline = time.monotonic() + 300
    while runs.exclude(state__in=[RunState.DONE, RunState.FAILED, RunState.CANCELLED]).exists():
        assert time.monotonic() < deadline, list(runs.values_list("state", flat=True))
        time.sleep(1)
    done = runs.filter(state=RunState.DONE)
    print(f"{done.count()} runs done after {time.monotonic() - started:.0f} s: " + ", ".join(
        f"{run.pg_install.block_size // 1024} kB {run.tps:.0f} tps" for run in done.select_related("pg_install")
    ))  # fmt: skip
    assert done.count() == ROUNDS * 3, list(runs.values_list("state", "error"))
    assert {run.environment["postgresql"]["block_size"] for run in done} == set(PAGE_SIZES_STUDIED)

    detail = page.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    table = detail.partition('id="metric-steady_tps"')[2].partition("</table>")[0]
    for size in PAGE_SIZES_STUDIED:
        row = re.search(rf"<tr>\s*<td>[^<]*\b{size // 1024} kB pages[^<]*</td>(.*?)</tr>", table, re.S)
        assert row, f"no row for {size // 1024} kB pages in {table}"
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
        n, mean_sd, minimum, median, maximum = cells[:5]
        assert n == str(ROUNDS) and re.fullmatch(r"[0-9.]+ ± [0-9.]+", mean_sd.strip()), cells
        assert 0 < float(minimum) <= float(median) <= float(maximum), cells

    # Seed 001's own table: page size | avg ± stdev | min | median | max of tps, on the campaign
    # page, in the printable report and in the CSV export, from the same runs.
    report = page.get(reverse("compare-report"), {"campaign": campaign.pk}).content.decode()
    asked = {"campaign": str(campaign.pk), "what": "table"}
    rows = list(csv.reader(io.StringIO(page.get(reverse("compare-export-csv"), asked).content.decode())))
    assert rows[0] == ["page size", "avg", "stdev", "min", "median", "max", "n"], rows
    assert [line[0] for line in rows[1:]] == ["2 kB", "4 kB", "8 kB"] and {line[6] for line in rows[1:]} == {"2"}
    for line in rows[1:]:
        tps = sorted(
            float(r.steady_tps_mean or 0) for r in done if r.pg_install.block_size == int(line[0].split()[0]) * 1024
        )
        assert float(line[3]) == pytest.approx(tps[0]) and float(line[5]) == pytest.approx(tps[-1]), (line, tps)
        assert float(line[1]) == pytest.approx(statistics.mean(tps)), (line, tps)
        exported = [float(line[1]), float(line[2]), *(float(v) for v in line[3:6])]
        for name, html_page in (("campaign page", detail), ("report", report)):
            shown_row = next(row for row in table_in(html_page) if row[0] == line[0])
            mean, _, sd = shown_row[1].partition(" ± ")
            # To one decimal, as the page rounds (half up): the export keeps every digit.
            numbers = [float(mean), float(sd), *map(float, shown_row[2:5])]
            assert numbers == pytest.approx(exported, abs=0.051), (name, shown_row, line)
    print("\n".join(" | ".join(line) for line in rows))


def page_size_sources(page: Client, host: Host) -> list[HostSource]:
    """The sources the preset's form offers for the host (asked of lab1 over SSH)."""
    response = page.get(reverse("campaign-new"), {"preset": "page-size", "host": str(host.pk)})
    return list(response.context["page_size"].sources)
