"""The run list in a real browser (Debian's chromium under Playwright, against uvicorn): filter,
page, select runs on two pages and open the comparison; states follow the event stream.
Screenshots go to test-artifacts/."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page

from runs.jobs import live
from runs.models import Device, Host, Run, RunSample, RunState, RunTransition
from runs.tests.bench.test_run_list import make_runs_on
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in, signed_in, wait_until
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
SELECTED = "JSON.parse(sessionStorage.getItem('benchlab.runList.selected') || '[]').length"


def text(page: Page, selector: str) -> str:
    return " ".join((page.text_content(selector) or "").split())


def shown(page: Page, selector: str) -> str:
    """What the element reads on screen, a line break as a space."""
    return " ".join(page.inner_text(selector).split())


def rows(page: Page) -> list[int]:
    return list(page.evaluate("[...document.querySelectorAll('input.pick-run')].map((box) => Number(box.value))"))


def compare_href(page: Page) -> str | None:
    return page.get_attribute("#compare-selected", "data-href")


def test_a_viewer_filters_pages_and_selects_runs_on_two_pages_to_compare(web_server: str) -> None:
    lab1, lab2 = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    hdd = make_device(lab2, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD_1")
    # The HDD's three runs are the oldest: with 25 a page they are on page 2, after 30 on the SSD.
    on_hdd = make_runs_on(hdd, make_pg_install(lab2), 3, datetime(2025, 3, 1, tzinfo=UTC), filesystem="xfs")
    on_ssd = make_runs_on(make_device(lab1), make_pg_install(lab1), 30, datetime(2025, 4, 1, tzinfo=UTC),
                          state=RunState.DONE, tps=1234.5, mount_options="noatime")  # fmt: skip
    make_user("vera", "viewer", password=PASSWORD)
    newest, hdd_run = on_ssd[-1].pk, on_hdd[-1].pk
    with signed_in(web_server, "vera", "/runs/", height=900) as (page, violations, _errors):
        unpaged_summary = text(page, "#paging-summary")
        page.screenshot(path=str(ARTIFACTS / "run-list.png"), full_page=True)

        # Filter by device: by name in the form, the URL carries only what was set.
        page.select_option("#id_device", label="lab2:hdd0")
        page.click("#run-filters button[type=submit]")
        page.wait_for_load_state()
        filtered_url, filtered_rows = page.url, rows(page)
        kept_device = page.locator("#id_device option:checked").text_content()
        compare_these = (text(page, "#compare-filtered"), page.get_attribute("#compare-filtered", "href"))
        page.check(f"input.pick-run[value='{hdd_run}']")
        one_selected = (text(page, "#selected-count"), page.is_disabled("#compare-selected"))
        page.screenshot(path=str(ARTIFACTS / "run-list-filtered.png"), full_page=True)

        # Page through all runs, 25 a page (choosing the size submits the form).
        page.click("text=Clear filters")
        page.wait_for_load_state()
        page.select_option("#id_per_page", "25")
        page.wait_for_url("**/runs/?per_page=25")
        first_page = (text(page, "#paging-summary"), rows(page)[0], text(page, "#selection-note"))
        page.check(f"input.pick-run[value='{newest}']")
        two_selected = (text(page, "#selected-count"), page.is_enabled("#compare-selected"), compare_href(page))
        page.click("#paging a[rel=next]")
        page.wait_for_url("**/runs/?per_page=25&page=2")
        second_page = (text(page, "#paging-summary"), page.is_checked(f"input.pick-run[value='{hdd_run}']"))
        page.check("#select-page")
        all_of_page_two = text(page, "#selected-count")
        page.screenshot(path=str(ARTIFACTS / "run-list-selected.png"), full_page=True)
        page.uncheck("#select-page")
        none_of_page_two = (text(page, "#selected-count"), page.is_disabled("#compare-selected"))
        page.check(f"input.pick-run[value='{hdd_run}']")
        page.click("#paging a[rel=first]")
        page.wait_for_url("**/runs/?per_page=25&page=1")
        back_on_page_one = (page.is_checked(f"input.pick-run[value='{newest}']"),
                            page.evaluate("document.getElementById('select-page').indeterminate"))  # fmt: skip
        expected_href = f"/compare/?runs={min(hdd_run, newest)},{max(hdd_run, newest)}"
        href_before_click = compare_href(page)
        page.click("#compare-selected")
        page.wait_for_url(f"**{expected_href}")
        compare_url = page.url

        page.goto(f"{web_server}/runs/")
        page.click("#clear-selection")
        cleared = (text(page, "#selected-count"), page.is_disabled("#compare-selected"), page.evaluate(SELECTED))

        page.goto(f"{web_server}/runs/?per_page=25&page=99")
        past_the_end = (text(page, "#past-the-end"), text(page, "#paging-summary"))
        page.screenshot(path=str(ARTIFACTS / "run-list-past-the-end.png"), full_page=True)

        page.goto(f"{web_server}/runs/?date_from=2025-02-30&device=999999&sort=fastest")
        refusal = text(page, "#filter-errors")
        page.screenshot(path=str(ARTIFACTS / "run-list-bad-filter.png"), full_page=True)

    assert unpaged_summary == "runs 1\N{EN DASH}33 of 33"
    assert filtered_url.endswith(f"/runs/?device={hdd.pk}&per_page=50"), filtered_url
    assert sorted(filtered_rows) == sorted(run.pk for run in on_hdd) and kept_device == "lab2:hdd0"
    assert compare_these == ("Compare the 3 runs these filters list", f"/compare/?device={hdd.pk}")
    assert one_selected == ("1", True)
    assert first_page == ("runs 1\N{EN DASH}25 of 33", newest,
                          "1 run selected (1 on other pages or filters); select one more to compare.")  # fmt: skip
    assert two_selected == ("2", True, expected_href)
    assert second_page == ("runs 26\N{EN DASH}33 of 33", True)
    assert all_of_page_two == "9"  # the page's 8, and the newest run on page 1
    assert none_of_page_two == ("1", True)
    assert back_on_page_one == (True, True)
    assert href_before_click == expected_href and compare_url == f"{web_server}{expected_href}"
    assert cleared == ("0", True, 0)
    assert past_the_end == (
        "There is no page 99: these runs fill pages 1 to 2; this is the last.",
        "runs 26\N{EN DASH}33 of 33",
    )
    assert "Queued from: must be a day written YYYY-MM-DD" in refusal
    assert "Device: no device has id 999999" in refusal
    assert "Sort by: must be one of queued, -started, started, -tps, tps, host, -host, state, -state" in refusal
    assert not violations, violations


def test_states_follow_the_stream_and_new_runs_reload_only_the_newest_unfiltered_page(web_server: str) -> None:
    lab1 = make_host(name="lab1")
    runs = make_runs_on(make_device(lab1), make_pg_install(lab1), 30, datetime(2025, 4, 1, tzinfo=UTC))
    oldest, newest = runs[0].pk, runs[-1].pk
    make_user("vera", "viewer", password=PASSWORD)
    new_run = newest + 1000  # queued elsewhere; no row is needed for the event
    with chromium(height=900) as (context, violations):
        page = context.new_page()
        log_in(page, web_server, "vera")
        page.goto(f"{web_server}/runs/?per_page=25&page=2")  # the oldest runs
        page.evaluate("window.notReloaded = true")
        Run.objects.filter(pk=oldest).update(state=RunState.MEASURING)  # the database first, as run_transition
        live.publish(oldest, "state", {"state": "measuring", "label": "measuring", "at": "x"})
        live.publish(new_run, "state", {"state": "queued", "label": "queued", "at": "x"})
        wait_until(page, f"document.querySelector('td.state[data-run=\"{oldest}\"] .state-label').textContent "
                         "=== 'measuring'", timeout_ms=10_000)  # fmt: skip
        wait_until(page, "!document.getElementById('new-runs').hidden", timeout_ms=10_000)
        page_two_kept = page.evaluate("window.notReloaded === true")
        page.screenshot(path=str(ARTIFACTS / "run-list-new-runs.png"), full_page=True)

        page.goto(f"{web_server}/runs/")
        page.evaluate("window.notReloaded = true")
        # Waited for as a navigation: polling the page while it reloads can hit it mid-way.
        with page.expect_navigation(timeout=10_000):
            live.publish(new_run + 1, "state", {"state": "queued", "label": "queued", "at": "x"})
        reloaded = page.evaluate("window.notReloaded !== true")

    assert page_two_kept, "page 2 reloaded for a new run instead of saying so"
    assert reloaded, "the newest unfiltered page did not reload for a new run"
    assert not violations, violations


def test_the_list_shows_where_runs_are_and_what_queued_ones_wait_for_live_and_sorts_by_its_headers(
    web_server: str,
) -> None:
    lab1, lab2 = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    ssd, hdd = make_device(lab1), make_device(lab2, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-H")
    pg1, pg2 = make_pg_install(lab1), make_pg_install(lab2)
    olga, vera = make_user("olga", "operator"), make_user("vera", "viewer", password=PASSWORD)
    start = datetime(2025, 4, 1, 14, 0, tzinfo=UTC)
    done = make_run(lab1, ssd, pg1, queued_by=olga, client_host=lab2, scale=10, clients=8, threads=2, duration_s=20,
                    steady_tps_mean=2011.24, tps=1987.6, started_at=start,
                    finished_at=start + timedelta(seconds=47))  # fmt: skip
    measuring = make_run(lab2, hdd, pg2, state=RunState.MEASURING, queued_by=olga, warmup_s=5, duration_s=30,
                         started_at=start + timedelta(minutes=1))  # fmt: skip
    RunTransition.objects.create(run=measuring, state=RunState.WARMING_UP, at=start + timedelta(minutes=1, seconds=9))
    RunSample.objects.bulk_create(RunSample(run=measuring, second=s, tps=900.0, latency_ms=2.0) for s in range(1, 22))
    Host.objects.filter(pk=lab2.pk).update(claimed_by=measuring)
    queued = [make_run(lab2, hdd, pg2, state=RunState.QUEUED, queued_by=vera) for _ in range(3)]
    for minute, run in enumerate([done, measuring, *queued]):
        Run.objects.filter(pk=run.pk).update(created_at=start + timedelta(minutes=minute))
    last = f'td.state[data-run="{queued[-1].pk}"]'
    with signed_in(web_server, "vera", "/runs/", height=900) as (page, violations, _errors):
        position = text(page, f'td.state[data-run="{measuring.pk}"]')
        waiting = text(page, last)
        done_row = [shown(page, f"#run-{done.pk} td:nth-child({n})") for n in (5, 8, 9, 10, 11, 12)]
        ends = shown(page, f"#run-{measuring.pk} td:nth-child(12)")
        # The table, with its Finished column, stays within the page's width.
        overflow = page.evaluate(
            "(() => { const main = document.querySelector('main');"
            " return document.getElementById('run-list').getBoundingClientRect().right"
            " - (main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight)); })()"
        )
        tps_header = shown(page, "#run-list th:nth-child(9)")
        page.screenshot(path=str(ARTIFACTS / "run-list-positions.png"), full_page=True)
        # pgbench's second moves on in the list without a reload, a second a second.
        detail = f"document.querySelector('td.state[data-run=\"{measuring.pk}\"] .state-detail').textContent"
        shown_at = time.monotonic()
        wait_until(page, f"Number({detail}.match(/second (\\d+)/)[1]) >= 18", timeout_ms=10_000)
        later, took = text(page, f'td.state[data-run="{measuring.pk}"]'), time.monotonic() - shown_at

        # The measuring run ends: its state at once, and the queued runs' waits with the next refresh.
        Run.objects.filter(pk=measuring.pk).update(state=RunState.DONE, steady_tps_mean=880.0)
        Host.objects.filter(pk=lab2.pk).update(claimed_by=None)
        live.publish(measuring.pk, "state", {"state": "done", "label": "done", "at": "x"})
        wait_until(page, f"!document.querySelector('{last}').textContent.includes('busy')", timeout_ms=10_000)
        states = [text(page, f'td.state[data-run="{pk}"]') for pk in (measuring.pk, queued[-1].pk, queued[0].pk)]
        after = (*states, text(page, f"#run-{measuring.pk} td.number"))
        page.screenshot(path=str(ARTIFACTS / "run-list-positions-after.png"), full_page=True)

        # Sort by clicking headers: tps, highest first; again, lowest first (no tps last either way).
        page.click("#run-list th a:text('tps')")
        page.wait_for_url("**/runs/?sort=-tps")
        by_tps = rows(page)
        tps_sorted = (page.get_attribute("#run-list th:nth-child(9)", "aria-sort"), page.input_value("#id_sort"))
        page.click("#run-list th a:text('tps')")
        page.wait_for_url("**/runs/?sort=tps")
        by_tps_ascending = rows(page)
        page.screenshot(path=str(ARTIFACTS / "run-list-sorted.png"), full_page=True)
        # The sort select, with a filter: both kept in the URL and across the pages.
        page.select_option("#id_per_page", "25")
        page.wait_for_url("**/runs/?sort=tps&per_page=25")
        page.select_option("#id_sort", label="server host A to Z")
        page.wait_for_url("**/runs/?sort=host&per_page=25")
        by_host = rows(page)

    assert position == "measuring, second 16 of 30", position
    assert waiting == f"queued: lab2 busy with run {measuring.pk}; 2 runs ahead", waiting
    assert later in ("measuring, second 18 of 30", "measuring, second 19 of 30"), later
    assert took >= 1, f"second 18 shown {took:.1f} s after second 16: faster than pgbench counts"
    assert done_row == ["lab2", "TPC-B like scale 10 · 8 clients · 2 threads · 20 s", "2,011.2",
                        "2025-04-01 14:00 UTC by olga", "2025-04-01 14:00 UTC", "2025-04-01 14:00 UTC took 47 s"], \
        done_row  # fmt: skip
    assert ends == "pgbench ends ≈ 14:01:44 UTC", ends  # warming up from 14:01:09, 5 s + 30 s
    assert overflow < 1, f"the run list is {overflow} px wider than the page"
    assert tps_header == "tps steady-state mean"
    # lab2 free: the first run ahead on it is named (it starts next), linked to its page.
    assert after == ("done", f"queued: lab2: 2 runs ahead of it, the first (run {queued[0].pk}) next to start",
                     "queued: next in line", "880.0"), after  # fmt: skip
    assert by_tps == [done.pk, measuring.pk, *reversed([run.pk for run in queued])], by_tps
    assert tps_sorted == ("descending", "-tps")
    assert by_tps_ascending == [measuring.pk, done.pk, *reversed([run.pk for run in queued])], by_tps_ascending
    assert by_host == [done.pk, *reversed([run.pk for run in queued]), measuring.pk], by_host
    assert not violations, violations


def test_the_device_list_narrows_to_the_chosen_host_and_a_date_error_reads_as_the_inputs_do(
    web_server: str,
) -> None:
    lab1, lab2 = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    ssd = make_device(lab1)
    ram = make_device(lab2, name="ram", kind=Device.Kind.RAM, path="/dev/disk/by-id/ram2")
    make_device(lab2, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-H")
    make_runs_on(ssd, make_pg_install(lab1), 2, datetime(2025, 4, 1, tzinfo=UTC))
    make_user("vera", "viewer", password=PASSWORD)
    offered = "[...document.querySelectorAll('#id_device option')].filter((o) => !o.hidden).map((o) => o.textContent)"
    with signed_in(web_server, "vera", "/runs/", height=900) as (page, violations, _errors):
        every_device = page.evaluate(offered)
        page.select_option("#id_device", label="lab2:ram")
        page.select_option("#id_host", label="lab1")
        on_lab1 = (page.evaluate(offered), page.input_value("#id_device"))
        page.select_option("#id_host", label="lab2")
        on_lab2 = page.evaluate(offered)
        page.select_option("#id_device", label="lab2:ram")
        page.click("#run-filters button[type=submit]")
        page.wait_for_load_state()
        filtered = (page.url, text(page, "#no-runs"))

        # A device of another host in the URL stays chosen (the form says what was asked), and the
        # empty list says why.
        page.goto(f"{web_server}/runs/?host={lab1.pk}&device={ram.pk}")
        kept = (page.evaluate(offered), text(page, "#no-runs"))

        # The date inputs show the browser's format; the refusal names the days in words.
        page.goto(f"{web_server}/runs/")
        page.fill("#id_date_from", "2026-11-25")
        page.fill("#id_date_to", "2026-11-20")
        page.click("#run-filters button[type=submit]")
        page.wait_for_load_state()
        refusal = text(page, "#filter-errors")
        page.screenshot(path=str(ARTIFACTS / "run-list-date-error.png"))

    assert every_device == ["any device", "lab1:ssd0", "lab2:hdd0", "lab2:ram"], every_device
    assert on_lab1 == (["any device", "lab1:ssd0"], ""), on_lab1  # lab2:ram dropped with the host change
    assert on_lab2 == ["any device", "lab2:hdd0", "lab2:ram"], on_lab2
    assert filtered[0].endswith(f"/runs/?host={lab2.pk}&device={ram.pk}&per_page=50"), filtered
    assert filtered[1] == "No run matches these filters.", filtered
    assert kept[0] == ["any device", "lab1:ssd0", "lab2:ram"], kept
    assert "lab2:ram is a device of lab2, not of lab1: only runs on it whose pgbench ran on lab1" in kept[1], kept
    assert "Queued until: 20 Nov 2026 is before Queued from (25 Nov 2026): no day is in between" in refusal, refusal
    assert not violations, violations
