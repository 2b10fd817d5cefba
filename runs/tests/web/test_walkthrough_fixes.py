"""What a browser walk-through of issue 13 ("Everyday use") found, fixed: a run cancelled while
measuring says what it measured, when it was cancelled and by whom, and which figures pgbench never
printed; a one-second run reads in the singular and without a warm-up it did not have; a styled 403;
/favicon.ico; the list's wait names the host and the run ahead; the run list's Finished column;
the comparison's units said once; the health page's worker count. Server-side, with Django's test
client; what only a browser shows is in the browser test files named in each test's docstring."""

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from runs.common.services import health
from runs.models import AuditAction, AuditEvent, Host, Run, RunArtifact, RunSample, RunState, RunTransition
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

START = datetime(2026, 11, 24, 6, 46, 35, tzinfo=UTC)
STEPS = [
    (RunState.QUEUED, 0),
    (RunState.PREPARING_STORAGE, 1),
    (RunState.INITIALIZING_DATABASE, 1),
    (RunState.WARMING_UP, 4),
    (RunState.MEASURING, 10),
    (RunState.COLLECTING, 18),
    (RunState.CLEANING_UP, 18),
    (RunState.CANCELLED, 19),
]


def text_of(page: str, element_id: str, tag: str = "td") -> str:
    """The text of the element with that id (tags dropped, spaces squeezed)."""
    match = re.search(rf'<{tag}[^>]* id="{element_id}"[^>]*>(.*?)</{tag}>', page, re.S)
    assert match, element_id
    blocks_apart = re.sub(r"</(h\d|p|li|div|dd|dt|td|th)>", " ", match[1])
    return " ".join(re.sub(r"<[^>]+>", "", blocks_apart).split())


def cancelled_while_measuring(**fields: Any) -> Run:
    """Run 7 of the walk-through: 5 s warm-up + 60 s planned, cancelled by otto 8 measured seconds
    in. pgbench was stopped before its summary: no whole-run tps, latency or failed count."""
    host = make_host(name="lab1")
    defaults: dict[str, Any] = {
        "state": RunState.CANCELLED, "warmup_s": 5, "duration_s": 60, "scale": 5, "started_at": START,
        "finished_at": START + timedelta(seconds=19), "steady_tps_mean": 1925.6, "steady_tps_stddev": 498.3,
        "summary": {"pgbench_version": "15.20", "tps": None}, "metrics": {"cache_hit_ratio": 0.9849, "checkpoints": 0},
    }  # fmt: skip
    run = make_run(host, make_device(host), make_pg_install(host), **(defaults | fields))
    RunTransition.objects.bulk_create(
        RunTransition(run=run, state=state, at=START + timedelta(seconds=after)) for state, after in STEPS
    )
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=1900.0 + s, latency_ms=1.0, warmup=s <= 5) for s in range(1, 14)
    )
    AuditEvent.objects.create(
        at=START + timedelta(seconds=17), actor_name="otto", action=AuditAction.RUN_CANCELLED, object_type="run",
        object_id=str(run.pk), object_repr=str(run), message="while measuring",
    )  # fmt: skip
    return run


# ---- item 1: a run cancelled while measuring ----


@pytest.mark.django_db
def test_a_run_cancelled_while_measuring_says_what_it_measured_and_what_pgbench_never_printed(
    client_for: ClientFactory,
) -> None:
    run = cancelled_while_measuring()

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    assert text_of(page, "cancelled", "section") == (
        "Cancelled while measuring otto cancelled it at 2026-11-24 06:46:52 UTC; pgbench was stopped after measuring "
        "8 of the 60 seconds planned (the 5 s warm-up not counted). The results below cover only what ran before."
    )
    assert text_of(page, "tps-steady-note", "small") == "mean ± sd of the 8 measured seconds (of 60 planned), " \
                                                        "warm-up excluded"  # fmt: skip
    assert text_of(page, "tps-steady") == "1925.6 ± 498.3"
    assert text_of(page, "tps-whole") == "not reported (pgbench was stopped)"
    assert text_of(page, "latency-average") == "not reported (pgbench was stopped)"
    assert text_of(page, "failed-skipped") == "not reported (pgbench was stopped)"
    assert "ms ± ms" not in page and "– / –" not in page
    assert "0.9849" in page
    # It stored no environment (a worker stores it with the results): no table of empty facts.
    assert "Environment as it was" not in page and "cores, –" not in page


@pytest.mark.django_db
def test_a_shared_cancelled_run_counts_its_measured_seconds_too(client_for: ClientFactory) -> None:
    run = cancelled_while_measuring()
    vera = client_for("vera")
    made = vera.post(reverse("share-new"), {"kind": "run", "target": run.pk})
    url = vera.get(made["Location"]).content.decode().split('id="new-share-url" value="', 1)[1].split('"', 1)[0]

    page = Client().get(url).content.decode()

    assert text_of(page, "tps-steady-note", "small") == "mean ± sd of the 8 measured seconds (of 60 planned), " \
                                                        "warm-up excluded"  # fmt: skip
    assert text_of(page, "tps-whole") == "not reported (pgbench was stopped)" and "otto" not in page


@pytest.mark.django_db
def test_a_run_cancelled_while_queued_says_by_whom_and_that_nothing_ran(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED,
                   queued_by=client_for.users["otto"])  # fmt: skip
    otto = client_for("otto")
    otto.post(reverse("run-cancel", args=[run.pk]))

    page = otto.get(reverse("run-detail", args=[run.pk])).content.decode()
    shared_by_nobody = Run.objects.get(pk=run.pk)

    cancelled = text_of(page, "cancelled", "section")
    assert cancelled.startswith("Cancelled before it started otto cancelled it at ") and cancelled.endswith(
        "UTC: nothing of it ran."
    ), cancelled
    assert shared_by_nobody.state == RunState.CANCELLED
    assert 'id="run-took-fact" hidden' in page  # it never started: no "Running for" or "Took" with a dash


@pytest.mark.django_db
def test_a_queued_run_says_nothing_of_how_long_it_runs_until_it_starts(client_for: ClientFactory) -> None:
    host = make_host()
    queued = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    running = make_run(host, queued.device, queued.pg_install, state=RunState.MEASURING, started_at=START)
    vera = client_for("vera")

    waiting = vera.get(reverse("run-detail", args=[queued.pk])).content.decode()
    measuring = vera.get(reverse("run-detail", args=[running.pk])).content.decode()

    assert '<div id="run-took-fact" hidden><dt>Running for</dt>' in waiting
    assert '<div id="run-took-fact"><dt>Running for</dt><dd id="run-took" data-seconds=' in measuring


# ---- item 2: a one-second run without a warm-up ----


@pytest.mark.django_db
def test_a_one_second_run_reads_in_the_singular_and_without_a_warm_up(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), warmup_s=0, duration_s=1, tps=1617.4,
                   steady_tps_mean=1611.9, steady_tps_stddev=None, latency_avg_ms=1.228, latency_stddev_ms=0.597,
                   failed_transactions=0, skipped_transactions=None, summary={"tps": 1617.4})  # fmt: skip
    RunSample.objects.create(run=run, second=1, tps=1611.9, latency_ms=1.2)

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    assert text_of(page, "tps-steady-note", "small") == "mean ± sd of the 1 measured second"
    assert text_of(page, "tps-steady") == "1611.9 (one second: no sd)"
    assert text_of(page, "sample-count", "p") == "1 of 1 second"
    assert text_of(page, "latency-average") == "1.228 ms ± 0.597 ms"
    skipped = "none skipped: pgbench skips only under a rate and latency limit"
    assert text_of(page, "failed-skipped") == f"0 failed · {skipped}"
    assert "warm-up excluded" not in page and "cancelled" not in text_of(page, "run-state", "span")
    assert "<th>checkpoints</th><td>not reported</td>" in page  # no pg_stat figures stored for it


@pytest.mark.django_db
def test_sorting_by_tps_puts_a_cancelled_runs_partial_figure_after_every_whole_one(
    client_for: ClientFactory,
) -> None:
    cancelled = cancelled_while_measuring()  # 1925.6, over 8 seconds
    host, device, pg = cancelled.server_host, cancelled.device, cancelled.pg_install
    fast, slow = (make_run(host, device, pg, steady_tps_mean=tps) for tps in (2576.0, 397.7))
    unfinished = make_run(host, device, pg, state=RunState.QUEUED)
    vera = client_for("vera")

    highest = vera.get(reverse("runs"), {"sort": "-tps"}).content.decode()
    lowest = vera.get(reverse("runs"), {"sort": "tps"}).content.decode()

    def order(page: str) -> list[int]:
        return [int(pk) for pk in re.findall(r'<tr id="run-(\d+)"', page)]

    assert order(highest) == [fast.pk, slow.pk, cancelled.pk, unfinished.pk]
    assert order(lowest) == [slow.pk, fast.pk, cancelled.pk, unfinished.pk]
    row = highest.split(f'<tr id="run-{cancelled.pk}">', 1)[1].split("</tr>", 1)[0]
    assert re.search(r'data-live="tps">1,925.6<br><small class="partial" title="[^"]+">partial</small>', row), row
    assert "partial" not in highest.split(f'<tr id="run-{fast.pk}">', 1)[1].split("</tr>", 1)[0]


# ---- item 6: the run list ----


@pytest.mark.django_db
def test_a_queued_run_on_a_free_host_names_the_run_ahead_and_what_that_one_waits_for(
    client_for: ClientFactory,
) -> None:
    """The walk-through's runs 4 and 5: run 4 (lab2 serving, pgbench on lab1) waits for lab1, busy
    with run 1; run 5, on lab2 alone, waits behind run 4 although lab2 is free."""
    lab1, lab2 = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    ram1, pg1 = make_device(lab1, name="ram"), make_pg_install(lab1)
    ram2, pg2 = make_device(lab2, name="ram", path="/dev/disk/by-id/ram2"), make_pg_install(lab2)
    measuring = make_run(lab1, ram1, pg1, state=RunState.MEASURING)
    Host.objects.filter(pk=lab1.pk).update(claimed_by=measuring)
    run4 = make_run(lab2, ram2, pg2, state=RunState.QUEUED, client_host=lab1)
    run5 = make_run(lab2, ram2, pg2, state=RunState.QUEUED)
    run6 = make_run(lab2, ram2, pg2, state=RunState.QUEUED)

    page = client_for("vera").get(reverse("runs")).content.decode()

    def state(run: Run) -> tuple[str, list[str]]:
        cell = page.split(f'data-run="{run.pk}"', 1)[1].split("</td>", 1)[0]
        return " ".join(re.sub(r"<[^>]+>", "", cell.split(">", 1)[1]).split()), re.findall(r'href="([^"]+)"', cell)

    assert state(run4) == (f"queued: lab1 busy with run {measuring.pk}; next in line", [f"/runs/{measuring.pk}/"])
    assert state(run5) == (f"queued: lab2: run {run4.pk} ahead of it, waiting for lab1", [f"/runs/{run4.pk}/"])
    assert state(run6)[0] == f"queued: lab2: 2 runs ahead of it, the first (run {run4.pk}) waiting for lab1"


@pytest.mark.django_db
def test_the_run_list_says_when_runs_finished_how_long_they_took_and_when_pgbench_ends(
    client_for: ClientFactory,
) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    done = make_run(host, device, pg, started_at=START, finished_at=START + timedelta(seconds=47))
    never = make_run(host, device, pg, state=RunState.CANCELLED, finished_at=START)
    running = make_run(host, device, pg, state=RunState.MEASURING, warmup_s=5, duration_s=30, started_at=START)
    RunTransition.objects.create(run=running, state=RunState.WARMING_UP, at=START + timedelta(seconds=20))
    RunTransition.objects.create(run=running, state=RunState.MEASURING, at=START + timedelta(seconds=26))
    preparing = make_run(host, device, pg, state=RunState.PREPARING_STORAGE, started_at=START)

    page = client_for("vera").get(reverse("runs")).content.decode()

    def finished(run: Run) -> str:
        row = page.split(f'<tr id="run-{run.pk}">', 1)[1].split("</tr>", 1)[0]
        cell = row.split('data-live="finished">', 1)[1].split("</td>", 1)[0]
        return " ".join(re.sub(r"<[^>]+>", " ", cell).split())

    assert "<th>Finished</th>" in page
    assert finished(done) == "2026-11-24 06:47 UTC took 47 s"
    assert finished(never) == "2026-11-24 06:46 UTC never started"
    # pgbench started with the warm-up at 06:46:55: 5 s + 30 s later.
    assert finished(running) == "pgbench ends ≈ 06:47:30 UTC"
    assert finished(preparing) == "–"


@pytest.mark.django_db
def test_a_device_of_another_host_is_said_when_the_list_is_empty_and_days_read_unambiguously(
    client_for: ClientFactory,
) -> None:
    lab1, lab2 = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    make_device(lab1, name="ssd")
    ram = make_device(lab2, name="ram", path="/dev/disk/by-id/ram2")
    make_run(lab2, ram, make_pg_install(lab2))
    vera = client_for("vera")

    empty = vera.get(reverse("runs"), {"host": lab1.pk, "device": ram.pk}).content.decode()
    days = vera.get(reverse("runs"), {"date_from": "2026-11-25", "date_to": "2026-11-20"}).content.decode()

    assert text_of(empty, "no-runs") == (
        "No run matches these filters. lab2:ram is a device of lab2, not of lab1: only runs on it whose pgbench "
        "ran on lab1, as their client host, would be listed."
    )
    # Each device option says its host, for the page to narrow the list to the chosen host's.
    assert f'<option value="{ram.pk}" selected data-host="{lab2.pk}">lab2:ram</option>' in empty
    assert "20 Nov 2026 is before Queued from (25 Nov 2026): no day is in between" in days


# ---- items 3, 4: a styled 403, /favicon.ico ----


@pytest.mark.django_db
def test_a_page_the_role_does_not_allow_is_the_styled_403_naming_the_role(client_for: ClientFactory) -> None:
    answer = client_for("vera").get(reverse("run-new"))

    page = answer.content.decode()
    assert answer.status_code == 403
    assert "<title>Not allowed · benchlab</title>" in page and "/static/css/benchlab.css" in page
    assert text_of(page, "your-role", "p") == "Your account, vera, has the viewer role, which does not allow " \
                                               "this page or action."  # fmt: skip
    assert 'href="/runs/"' in page and "Log out" in page


@pytest.mark.django_db
def test_favicon_ico_goes_to_benchlabs_icon_without_an_account(client_for: ClientFactory) -> None:
    answer = client_for(None).get("/favicon.ico")
    followed = client_for(None).get("/favicon.ico", follow=True)

    assert answer.status_code == 301 and answer["Location"] == "/static/favicon.svg"
    assert followed.status_code == 200 and b"<svg" in b"".join(followed.streaming_content)  # type: ignore[attr-defined]


# ---- item 8: words ----


@pytest.mark.django_db
def test_the_collapsed_log_says_what_it_holds_as_its_parts_do(client_for: ClientFactory) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    short, long = make_run(host, device, pg), make_run(host, device, pg)
    for run, lines in ((short, 3), (long, 300)):
        RunArtifact.objects.create(run=run, name="pgbench-init.txt", content="done in 1.52 s\n")
        RunArtifact.objects.create(run=run, name="pgbench.stderr.txt", content="progress: 1.0 s\n" * lines)
    vera = client_for("vera")

    whole = vera.get(reverse("run-detail", args=[short.pk])).content.decode()
    mixed = vera.get(reverse("run-detail", args=[long.pk])).content.decode()

    assert text_of(whole, "run-log-holds", "span") == (
        "all of pgbench -i (loading the database) and pgbench (its progress and messages)"
    )
    assert text_of(mixed, "run-log-holds", "span") == (
        "pgbench -i (loading the database): all of it and pgbench (its progress and messages): its last 200 lines"
    )


@pytest.mark.django_db
def test_the_run_page_says_page_sizes_in_kb_as_postgresql_does(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host, block_size=8192), summary={"tps": 1.0},
                   environment={"postgresql": {"version": "PostgreSQL 15.20", "block_size": 4096,
                                               "wal_block_size": 8192}})  # fmt: skip

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    assert "PostgreSQL 15.19, 4 kB pages ·" in " ".join(text_of(page, "run-where", "p").split())
    assert "; block 4 kB, WAL block 8 kB</td>" in page and "KiB" not in page


@pytest.mark.django_db
def test_the_comparison_says_each_unit_once(client_for: ClientFactory) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    runs = [make_run(host, device, pg, steady_tps_mean=tps, latency_avg_ms=2.0, duration_s=30, warmup_s=5,
                     rate_limit_tps=500.0, mount_options=mount,
                     environment={"postgresql": {"block_size": 8192, "wal_block_size": 8192}})
            for tps, mount in ((100.0, ""), (110.0, ""), (200.0, "noatime"), (210.0, "noatime"))]  # fmt: skip

    page = client_for("vera").get(reverse("compare"), {"runs": ",".join(str(r.pk) for r in runs)}).content.decode()
    common = " ".join(re.sub(r"<[^>]+>", " ", page.split('id="common-facts"', 1)[1].split("</dl>", 1)[0]).split())

    assert ">tps (steady state)</h3>" in page and "(tps)</h3>" not in page
    assert ">latency, mean (ms)</h3>" in page
    assert "duration (s) 30 " in common and "warm-up (s) 5 " in common and "rate limit (tps) 500 " in common
    assert " s s" not in common and "30 s" not in common
    assert "page size 8 kB" in common and "WAL block size 8 kB" in common and "(bytes)" not in common


@pytest.mark.parametrize(("replies", "detail"), [
    ([{"walk@vm": {"ok": "pong"}}], "1 worker: walk@vm"),
    ([{"b@vm": {"ok": "pong"}}, {"a@vm": {"ok": "pong"}}], "2 workers: a@vm, b@vm"),
])  # fmt: skip
def test_health_counts_workers_in_words(monkeypatch: pytest.MonkeyPatch, replies: list[Any], detail: str) -> None:
    monkeypatch.setattr(health.celery_app.control, "ping", lambda **kwargs: replies)

    report = health.health_report(["celery workers"])

    assert [component.detail for component in report.components] == [detail]


@pytest.mark.django_db
def test_the_client_hosts_field_has_one_help_and_one_note_per_host(client_for: ClientFactory) -> None:
    lab2 = make_host(name="lab2", address="10.200.0.12")
    page = client_for("otto").get(reverse("run-new")).content.decode()

    field = page.split('id="client-hosts-field"', 1)[1].split("</fieldset>", 1)[0]
    assert text_of(field, "id_client_hosts_helptext", "small").startswith(
        "Hosts to run pgbench on, over TCP, all at once"
    )
    assert field.count('name="client_hosts"') == 1 and f'value="{lab2.pk}"' in field
    assert field.count(f'id="client-note-{lab2.pk}"') == 1  # the script's note beside it, nothing else
    assert "empty: on the server itself" not in field
