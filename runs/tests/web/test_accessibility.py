"""Accessibility basics of the main pages.

In a real browser (Debian's chromium under Playwright, against uvicorn, no lab needed): axe-core,
pinned in package-lock.json and copied by scripts/vendor-assets to var/test-vendor/ (never served
to users), is injected into each main page and must find no serious or critical violation of
WCAG 2.1 A/AA or axe's best practices; the keyboard's focus is visible. With Django's test client:
every field of the forms has a label, a state is a word and not only a colour, and every chart
the comparison draws from the page has its numbers in text beside it.
Screenshots and each page's axe report (axe-<page>.json) go to test-artifacts/."""

import json
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from django.template import Context, Template
from django.urls import reverse
from playwright.sync_api import BrowserContext, Page

from runs.bench.specs import RunSpec
from runs.common.services.audit import audit_record
from runs.compare.query import ComparisonQuery
from runs.compare.services.shares import share_create
from runs.models import (
    AuditAction,
    AuditEvent,
    Campaign,
    CampaignConfiguration,
    Host,
    OsSource,
    Run,
    RunOsSeries,
    RunSample,
    RunState,
    RunTransition,
)
from runs.templatetags.vendor import VERSIONS
from runs.tests.browser import ARTIFACTS, PASSWORD, ROOT, chromium, log_in, signed_in, wait_until, watch_errors
from runs.tests.compare.test_browser_compare import CHARTS_DRAWN, make_study
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.job_factories import make_change_point
from runs.watch.series import series_key

AXE = ROOT / "var" / "test-vendor" / f"axe-core-{VERSIONS['axe-core']}" / "axe.js"
# WCAG 2.0 and 2.1, levels A and AA, and axe's best practices (landmarks, headings, …).
AXE_OPTIONS = {
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]},
    "resultTypes": ["violations"],
}
SERIOUS = ("serious", "critical")
# Serious violations known and left, each with where and what to fix: (page, axe rule, element) -> fix.
# Printed on every run, not counted (a page's other violations still fail the test). None today.
ELSEWHERE: dict[tuple[str, str, str], str] = {}


# ---- axe-core in the browser ----


def axe_report(page: Page, name: str) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now, also written to test-artifacts/axe-<name>.json.
    The page's context must bypass the Content-Security-Policy: the script goes in inline."""
    assert AXE.exists(), f"{AXE} is missing: run `npm ci --ignore-scripts && scripts/vendor-assets` (make assets)"
    page.add_script_tag(path=str(AXE))
    violations: list[dict[str, Any]] = page.evaluate("(options) => axe.run(document, options)", AXE_OPTIONS)[
        "violations"
    ]
    found = [
        {
            "id": violation["id"],
            "impact": violation["impact"],
            "help": violation["help"],
            "nodes": [{"target": node["target"], "html": node["html"][:300]} for node in violation["nodes"]],
        }
        for violation in violations
    ]
    (ARTIFACTS / f"axe-{name}.json").write_text(json.dumps({"url": page.url, "violations": found}, indent=2))
    return found


def serious(found: list[dict[str, Any]], page: str = "") -> list[str]:
    """The serious and critical violations, one line each with the elements they are on, but for
    those listed in ELSEWHERE for this page."""
    lines = []
    for violation in found:
        targets = [node["target"] for node in violation["nodes"]]
        targets = [t for t in targets if (page, violation["id"], " ".join(t)) not in ELSEWHERE]
        if violation["impact"] in SERIOUS and targets:
            lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']} — {targets}")
    return lines


def axe_context(context: BrowserContext) -> BrowserContext:
    """A second context of the same browser, with the first one's session, in which pages ignore
    their Content-Security-Policy (so axe's script can be injected). The first context still
    visits every page under the policy, and its violations are asserted."""
    assert context.browser is not None
    return context.browser.new_context(
        bypass_csp=True, viewport={"width": 1280, "height": 900}, storage_state=context.storage_state()
    )


# Each aria-describedby's ids that name no element on the page, as "field -> id".
DANGLING_DESCRIPTIONS = """[...document.querySelectorAll('[aria-describedby]')].flatMap((e) =>
    e.getAttribute('aria-describedby').split(/\\s+/).filter((id) => id && !document.getElementById(id))
    .map((id) => `${e.id || e.tagName} -> ${id}`))"""


# ---- what the pages show ----


def os_series(run: Run) -> None:
    """A run's iostat and vmstat columns, 12 samples each."""
    columns = {
        OsSource.IOSTAT: {"util_pct": 40.0, "r_await_ms": 0.4, "w_await_ms": 2.5, "r_per_s": 120.0, "w_per_s": 900.0},
        OsSource.VMSTAT: {"us": 20.0, "sy": 8.0, "wa": 12.0},
    }
    RunOsSeries.objects.bulk_create(
        RunOsSeries(run=run, source=source, column=column, values=[base + (i % 3) for i in range(12)])
        for source, by_column in columns.items()
        for column, base in by_column.items()
    )


def make_campaign(runs: list[Run]) -> Campaign:
    """A finished campaign of two of the study's configurations on the SSD, two runs each (one failed)."""
    campaign = Campaign.objects.create(name="barrier=0 on the SSD", base_spec={}, repetitions=2)
    for index, pair in enumerate((runs[0:2], runs[3:5])):  # the default mount options, then barrier=0
        configuration = CampaignConfiguration.objects.create(
            campaign=campaign,
            index=index,
            label=f"ssd · {pair[0].mount_options or 'default mount options'}",
            spec=RunSpec.from_run(pair[0]).as_json(),
        )
        for repetition, run in enumerate(pair, start=1):
            Run.objects.filter(pk=run.pk).update(campaign=campaign, configuration=configuration, repetition=repetition)
    Run.objects.filter(pk=runs[4].pk).update(state=RunState.FAILED, error="PANIC: could not write")
    return campaign


BROWSER_DB = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # uvicorn reads the rows


@pytest.fixture
def pages() -> dict[str, Any]:
    """The lab as the pages show it: a study to compare (12 finished runs with their samples), one
    of whose runs has iostat/vmstat series, a campaign, a busy host, one waiting for its cleanup, a
    disabled one, a share link, and an admin."""
    ids = make_study()
    runs = list(Run.objects.filter(pk__in=ids).order_by("pk"))
    lab1 = runs[0].server_host
    os_series(runs[0])
    Run.objects.filter(pk=runs[0].pk).update(
        metrics={"latency": {"count": 9000, "sampling_rate": 1, "p50_ms": 1.9, "p90_ms": 3.1, "p95_ms": 4.0,
                             "p99_ms": 6.2, "p999_ms": 9.9, "max_ms": 14.0}, "cache_hit_ratio": 0.9981,
                 "checkpoints": 1, "buffers_written": 1200},
    )  # fmt: skip
    # Its steps, each with its time: the muted times on the steps' tinted background are checked.
    RunTransition.objects.bulk_create(
        RunTransition(run=runs[0], state=state, at=datetime(2025, 4, 1, 14, 3, tzinfo=UTC) + timedelta(seconds=5 * i))
        for i, state in enumerate([RunState.QUEUED, RunState.PREPARING_STORAGE, RunState.INITIALIZING_DATABASE,
                                   RunState.WARMING_UP, RunState.MEASURING, RunState.COLLECTING, RunState.DONE])
    )  # fmt: skip
    campaign = make_campaign(runs)
    ada = make_user("ada", "admin", password=PASSWORD)
    # A run cancelled while measuring: its partial results, the cancel's box, "partial" in the list.
    cancelled = make_run(lab1, runs[0].device, runs[0].pg_install, state=RunState.CANCELLED, warmup_s=0,
                         duration_s=60, steady_tps_mean=1925.6, steady_tps_stddev=498.3, summary={"tps": None},
                         started_at=datetime(2025, 4, 1, 15, 0, tzinfo=UTC),
                         finished_at=datetime(2025, 4, 1, 15, 0, 19, tzinfo=UTC))  # fmt: skip
    RunTransition.objects.bulk_create(
        RunTransition(run=cancelled, state=state, at=datetime(2025, 4, 1, 15, 0, tzinfo=UTC) + timedelta(seconds=s))
        for state, s in ((RunState.MEASURING, 4), (RunState.CLEANING_UP, 18), (RunState.CANCELLED, 19))
    )
    RunSample.objects.bulk_create(
        RunSample(run=cancelled, second=s, tps=1900.0 + s, latency_ms=1.0) for s in range(1, 9)
    )
    event = audit_record(action=AuditAction.RUN_CANCELLED, target=cancelled, actor=ada, message="while measuring")
    AuditEvent.objects.filter(pk=event.pk).update(at=datetime(2025, 4, 1, 15, 0, 12, tzinfo=UTC))
    lab2 = make_host(name="lab2", address="10.200.0.12")
    device2, pg2 = make_device(lab2, name="ram", kind="ram"), make_pg_install(lab2)
    busy = make_run(lab1, runs[0].device, runs[0].pg_install, state=RunState.MEASURING, queued_by=ada)
    lost = make_run(lab2, device2, pg2, state=RunState.FAILED, error="lab2 stopped answering")
    Host.objects.filter(pk=lab1.pk).update(claimed_by=busy)
    Host.objects.filter(pk=lab2.pk).update(cleanup_pending_for=lost)
    make_host(name="lab3", address="10.200.0.13", enabled=False)
    share_create(kind="comparison", target=ComparisonQuery(run_ids=tuple(ids[:4])), by=ada, title="barrier=0")
    make_change_point(
        series_key=series_key(RunSpec.from_run(runs[0])),
        round_ref=f"r{ids[1]}",
        title="lab1 · lab1:ssd · ext4",
        change_low=0.08,
        change_high=0.12,
        p=0.0004,
        drift="lab1: kernel changed from 6.1.0-25 to 6.1.0-26 between round 5 and 6",
        comparison_url=f"/compare/?runs={ids[0]},{ids[1]}",
    )
    return {
        "ids": ids, "run": runs[0].pk, "campaign": campaign.pk, "busy": busy.pk, "lost": lost.pk,
        "cancelled": cancelled.pk, "series": series_key(RunSpec.from_run(runs[0])),
    }  # fmt: skip


# The main pages, by name: (path, how to know it is ready). The run page's charts draw when its
# script has read the samples; the comparison's when the data has come.
RUN_DRAWN = "!!(window.benchlabCharts && window.benchlabCharts.tps)"


def main_pages(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    compared = ",".join(map(str, data["ids"]))
    return {
        "home-inventory": ("/", ""),  # the home page is the inventory (nav "Inventory")
        "run-list": ("/runs/", ""),
        "run-page": (f"/runs/{data['run']}/", RUN_DRAWN),
        "run-page-live": (f"/runs/{data['busy']}/", ""),
        "run-page-cancelled": (f"/runs/{data['cancelled']}/", RUN_DRAWN),
        "run-list-by-tps": ("/runs/?sort=-tps", ""),
        "queue-form": ("/runs/new/", ""),
        "campaign-form": ("/campaigns/new/", ""),
        "campaign-page": (f"/campaigns/{data['campaign']}/", ""),
        "comparison": (f"/compare/?runs={compared}", CHARTS_DRAWN),
        "shares": ("/shares/", ""),
        "tokens": ("/tokens/", ""),
        "series-list": ("/series/", ""),
        "regressions": ("/regressions/", ""),
        "series-page": (f"/series/{data['series']}/", "!!document.querySelector('#series-figures canvas')"),
        "health": ("/health/", ""),
        "not-found": ("/runs/999999/", ""),
    }


def visit(page: Page, url: str, ready: str) -> None:
    page.goto(url)
    page.wait_for_load_state()
    if ready:
        wait_until(page, ready, 15_000)


@BROWSER_DB
def test_the_main_pages_have_no_serious_accessibility_violations(pages: dict[str, Any], page_server: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    reports: dict[str, list[dict[str, Any]]] = {}
    with chromium(height=900) as (context, violations):
        # The login page, in a checking context made before logging in (so without a session).
        checker = axe_context(context)
        login = checker.new_page()
        login.goto(f"{page_server}/accounts/login/")
        reports["login"] = axe_report(login, "login")
        login.close()

        page = context.new_page()
        watch_errors(page, errors)
        log_in(page, page_server, "ada")
        checker.close()
        checker = axe_context(context)  # with ada's session now
        checked = checker.new_page()
        for name, (path, ready) in main_pages(pages).items():
            visit(page, f"{page_server}{path}", ready)  # under the policy: its violations are asserted
            page.screenshot(path=str(ARTIFACTS / f"a11y-{name}.png"), full_page=True)
            visit(checked, f"{page_server}{path}", ready)
            reports[name] = axe_report(checked, name)
            if name == "run-page":
                step_times = checked.locator("#steps time").count()
        # The comparison's charts with their numbers opened beside them.
        visit(page, f"{page_server}{main_pages(pages)['comparison'][0]}", CHARTS_DRAWN)
        for summary in page.locator(".chart-summary > summary").all():
            summary.click()
        for section in ("series-section", "latency-section", "os-section"):
            page.locator(f"#{section}").screenshot(path=str(ARTIFACTS / f"a11y-comparison-{section}.png"))
        summaries = page.locator(".chart-summary-table").all_text_contents()
        # The queue form sent without a host: the server's error summary and the fields' errors (the
        # browser's own check of required fields is turned off, or it would stop the form first).
        visit(checked, f"{page_server}/runs/new/", "")
        checked.evaluate("document.querySelector('form.run-form').noValidate = true")
        checked.click("form.run-form button[type=submit]")
        checked.wait_for_load_state()
        checked.screenshot(path=str(ARTIFACTS / "a11y-queue-form-errors.png"), full_page=True)
        reports["queue-form-errors"] = axe_report(checked, "queue-form-errors")
        # Every id a field's aria-describedby names is on the page (its errors, its help), and a field
        # with an error has the red border.
        dangling = checked.evaluate(DANGLING_DESCRIPTIONS)
        described = checked.evaluate(
            "(() => { const field = document.getElementById('id_server_host');"
            " return field.getAttribute('aria-describedby').split(' ')"
            ".map((id) => document.getElementById(id).textContent.trim()); })()"
        )
        error_borders = checked.evaluate(
            "[...document.querySelectorAll('.field.has-error :is(input, select, textarea)')]"
            ".map((e) => getComputedStyle(e).borderTopColor)"
        )
        # The campaign form's preview: the matrix, and the errors of what cannot run.
        visit(checked, f"{page_server}/campaigns/new/?preset=ssd-vs-hdd", "")
        checked.click("#preview")
        checked.wait_for_load_state()
        checked.screenshot(path=str(ARTIFACTS / "a11y-campaign-preview.png"), full_page=True)
        reports["campaign-preview"] = axe_report(checked, "campaign-preview")
        # The check is not vacuous: a field without a label and faint text are found.
        checked.evaluate(
            "document.querySelector('main').insertAdjacentHTML('beforeend',"
            ' \'<p><input id="axe-canary"></p><p style="color: #c8c8c8">faint text</p>\')'
        )
        canary = {violation["id"] for violation in axe_report(checked, "canary") if violation["impact"] in SERIOUS}
        # ... and the step times' old grey (4.24:1 on the steps' background) would be found.
        visit(checked, f"{page_server}/runs/{pages['run']}/", RUN_DRAWN)
        checked.add_style_tag(content=".steps time { color: #6a7380; }")
        old_grey = [v for v in axe_report(checked, "canary-steps") if v["id"] == "color-contrast"]
        checker.close()

    assert {"label", "color-contrast"} <= canary, canary
    assert old_grey and all("time" in " ".join(node["target"]) for node in old_grey[0]["nodes"]), old_grey
    assert step_times >= 7, step_times  # the run page checked has its steps, each with its time
    assert dangling == [], dangling
    assert described and described[-1].startswith("This field is required"), described
    assert error_borders and set(error_borders) == {"rgb(180, 35, 24)"}, error_borders
    assert len(summaries) == 4 and all(re.search(r"\d\.\d", text) for text in summaries), summaries
    found = {name: serious(report, name) for name, report in reports.items()}
    print("\n".join(f"axe {name}: {lines or 'no serious or critical violation'}" for name, lines in found.items()))
    print(
        "\n".join(
            f"axe, left to its owner: {page} {rule} {target}: {fix}" for (page, rule, target), fix in ELSEWHERE.items()
        )
    )
    assert not {name: lines for name, lines in found.items() if lines}, found
    # 404s are expected from the not-found page itself, and 503 from the health page (no worker here).
    unexpected = [error for error in errors if "/runs/999999/" not in error and "/health/" not in error]
    assert not violations and not unexpected, violations + unexpected


@BROWSER_DB
def test_the_keyboard_focus_is_visible_and_skips_to_the_content(pages: dict[str, Any], page_server: str) -> None:
    with signed_in(page_server, "ada", "/", height=700) as (page, violations, _errors):
        page.keyboard.press("Tab")
        skip = page.evaluate(
            "(() => { const e = document.activeElement; const r = e.getBoundingClientRect();"
            " return {text: e.textContent.trim(), top: r.top, outline: getComputedStyle(e).outlineStyle}; })()"
        )
        page.screenshot(path=str(ARTIFACTS / "a11y-focus-skip-link.png"))
        page.keyboard.press("Enter")
        after_skip = page.evaluate("document.activeElement.id")
        main_ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "(() => { const e = document.activeElement; const s = getComputedStyle(e);"
            " return {tag: e.tagName, text: e.textContent.trim(), outline: s.outlineStyle, width: s.outlineWidth}; })()"
        )
        page.screenshot(path=str(ARTIFACTS / "a11y-focus-first-link.png"))

    assert skip["text"] == "Skip to the content" and skip["top"] >= 0 and skip["outline"] == "solid", skip
    assert after_skip == "main" and main_ring == "none"  # no ring around the whole content
    # The first thing after the skip is in the content (not the navigation again), with a ring around it.
    assert focused["tag"] == "A" and focused["outline"] == "solid" and focused["width"] == "3px", focused
    assert not violations, violations


# ---- the same rules, server-side ----


class FieldsAndLabels(HTMLParser):
    """The form fields of a page and what labels them (a <label for>, a wrapping <label>, aria-label)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[dict[str, str]] = []
        self.label_for: set[str] = set()
        self.open_labels = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {key: value or "" for key, value in attrs}
        if tag == "label":
            self.open_labels += 1
            if attributes.get("for"):
                self.label_for.add(attributes["for"])
        elif tag in ("input", "select", "textarea") and attributes.get("type") not in ("hidden", "submit", "button"):
            self.fields.append(attributes | {"wrapped": "yes" if self.open_labels else ""})

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self.open_labels -= 1

    def unlabelled(self) -> list[str]:
        return [
            field.get("name") or field.get("id") or str(field)
            for field in self.fields
            if not (field["wrapped"] or field.get("aria-label") or field.get("id") in self.label_for)
        ]


def unlabelled_fields(html: str) -> list[str]:
    parser = FieldsAndLabels()
    parser.feed(html)
    assert parser.fields, "the page has no form field"
    return parser.unlabelled()


@pytest.mark.django_db
def test_every_field_of_the_forms_has_a_label(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host))
    make_run(host, run.device, run.pg_install, mount_options="noatime")
    anonymous, otto = client_for(None), client_for("otto")
    pages = {
        "login": anonymous.get(reverse("login")),
        "campaign form": otto.get(reverse("campaign-new")),
        "comparison controls": otto.get(reverse("compare"), {"runs": f"{run.pk},{run.pk + 1}"}),
    }
    campaign = {"name": "study", "repetitions": "2", "action": "preview"}
    pages["campaign form with errors"] = otto.post(reverse("campaign-new"), campaign)

    missing = {name: unlabelled_fields(response.content.decode()) for name, response in pages.items()}

    assert not {name: fields for name, fields in missing.items() if fields}, missing


@pytest.mark.django_db
def test_a_state_is_a_word_not_only_a_colour(client_for: ClientFactory) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    done = make_run(host, device, pg)
    failed = make_run(host, device, pg, state=RunState.FAILED)
    Host.objects.filter(pk=host.pk).update(claimed_by=make_run(host, device, pg, state=RunState.MEASURING))
    client = client_for("vera")

    inventory = client.get(reverse("home")).content.decode()
    comparison = client.get(reverse("compare"), {"runs": f"{done.pk},{failed.pk}"}).content.decode()

    assert re.search(r'<span class="badge badge-busy">busy</span> with <a href="/runs/\d+/">run \d+</a>', inventory)
    assert f">{failed.pk} (failed)</a>" in comparison  # beside its red colour
    assert f">{done.pk}</a>" in comparison  # "done" is what "finished of all" counts


@pytest.mark.django_db
def test_the_comparison_charts_have_their_numbers_in_text_beside_them(client_for: ClientFactory) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    options = {"iostat": {"util_pct": 42.0}, "vmstat": {"us": 21.0, "sy": 9.0, "wa": 3.0}}
    runs = [
        make_run(host, device, pg, mount_options=mount, steady_tps_mean=tps, steady_tps_stddev=5.0, tps=tps,
                 latency_avg_ms=2.5, warmup_s=3, duration_s=20, os_means=options,
                 metrics={"latency": {"p50_ms": 1.25, "p90_ms": 2.0, "p95_ms": 2.5, "p99_ms": 4.75, "p999_ms": 9.0}})
        for mount, tps in (("", 1000.0), ("", 1010.0), ("noatime", 1200.0))
    ]  # fmt: skip

    page = client_for("vera").get(reverse("compare"), {"runs": ",".join(str(run.pk) for run in runs)})
    html = page.content.decode()

    described = set(re.findall(r'<canvas id="[^"]+" role="img" aria-label="[^"]+" aria-describedby="([^"]+)"', html))
    assert described == {"series-summary", "percentiles-summary", "iostat-summary", "vmstat-summary"}
    for summary in described:
        assert f'id="{summary}"' in html, summary
    assert '<th scope="row">noatime</th>' in html or "noatime</th>" in html
    assert "4.750" in html  # noatime's p99, in the percentiles summary
    assert "1,000.0 ± 5.0" in html  # the first shown run's steady-state tps
    assert "42.0" in html  # utilisation, in the iostat summary
    for table in ("steady_tps",):  # the per-metric charts point to their statistics table
        assert f'href="#metric-{table}"' in html


def test_the_run_page_pattern_summarises_its_chart_data_in_text() -> None:
    """The pattern the run page is to include (runs/templatetags/chart_summaries.py): its chart data
    (runs.bench.selectors.run_page.run_chart_data) as the table beside each chart, warm-up and measured apart."""
    chart = {
        "seconds": [1, 2, 3, 4, 5],
        "tps": [40.0, 60.0, 100.0, 110.0, 90.0],
        "latency_ms": [5.0, 4.0, 2.0, 1.5, 2.5],
        "warmup": [True, True, False, False, False],
        "iostat": {"util_pct": [10.0, None, 30.0], "r_per_s": [100.0, 200.0, 300.0]},
        "vmstat": {"us": [], "sy": [], "wa": []},
    }
    page = Template(
        "{% load chart_summaries %}"
        "{% run_series_summary chart as tps %}{% include 'runs/_chart_summary.html' with summary=tps summary_id='t' %}"
        "{% run_os_summary chart 'iostat' 'util_pct' as util %}"
        "{% include 'runs/_chart_summary.html' with summary=util summary_id='u' %}"
        "{% run_os_summary chart 'vmstat' as cpu %}"
        "{% include 'runs/_chart_summary.html' with summary=cpu summary_id='v' %}"
    ).render(Context({"chart": chart}))
    rows = [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in re.findall(r"<tr>(.*?)</tr>", page, re.S)]

    assert rows == [
        "series seconds mean min max",
        "tps, warm-up 2 s 50.0 40.0 60.0",
        "latency (ms), warm-up 2 s 4.500 4.000 5.000",
        "tps, measured 3 s 100.0 90.0 110.0",
        "latency (ms), measured 3 s 2.000 1.500 2.500",
        "series samples mean min max",
        "utilisation (%) 2 20.0 10.0 30.0",  # only the column this chart draws; a missing value is not a zero
    ]
    assert '<table class="runs chart-summary-table" id="t">' in page
    # No vmstat samples: no table, but the id the canvas names still exists, saying so.
    assert '<p class="visually-hidden" id="v">vmstat, per second of the run: no numbers yet.</p>' in page
