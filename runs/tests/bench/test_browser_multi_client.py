"""The run page of a run with two client hosts (seed 000's setup): live, each client's
throughput drawn dashed beside their total; finished, the same from what was stored, and a table
of each client's figures. In a real browser against uvicorn; the live events are published by
the test itself (the lab side is in test_run_execution.py and test_multi_client_lab.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from runs.jobs import live
from runs.models import Run, RunClient, RunClientSample, RunSample, RunState
from runs.tests.bench.test_browser_run_page import hover_chart, in_another_thread, text
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in, wait_until
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)
CLIENT_TPS = {"lab2": 400.0, "lab3": 600.0}


def publish_second(run: Run, second: int) -> None:
    for name, tps in CLIENT_TPS.items():
        live.publish(
            run.pk, "client_sample", {"client": name, "second": second, "tps": tps + second, "latency_ms": 2.0}
        )
    total = sum(CLIENT_TPS.values()) + 2 * second
    live.publish(run.pk, "sample", {"second": second, "tps": total, "latency_ms": 2.0, "warmup": False})


def store_results(run: Run) -> None:
    """As the worker stores a finished run: its samples, each client's, and each client's figures."""
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=sum(CLIENT_TPS.values()) + 2 * s, latency_ms=2.0) for s in range(1, 11)
    )
    for client in RunClient.objects.filter(run=run).select_related("host"):
        base = CLIENT_TPS[client.host.name]
        RunClientSample.objects.bulk_create(
            RunClientSample(run_client=client, second=s, tps=base + s, latency_ms=2.0) for s in range(1, 11)
        )
        RunClient.objects.filter(pk=client.pk).update(
            tps=base + 5, steady_tps_mean=base + 5.5, latency_avg_ms=2.0, latency_p50_ms=1.9, latency_p95_ms=3.1,
            latency_p99_ms=4.2, rtt_ms=0.081, exit_status=0,
        )  # fmt: skip
    Run.objects.filter(pk=run.pk).update(
        state=RunState.DONE, finished_at=datetime.now(UTC), tps=1010.0, steady_tps_mean=1011.0, start_skew_ms=1.7,
        summary={"tps": 1010.0},
    )  # fmt: skip


@BROWSER
def test_a_two_client_run_draws_each_client_and_their_total_live_and_once_done(web_server: str) -> None:
    server = make_host(name="lab1")
    lab2, lab3 = make_host(name="lab2", address="10.200.0.12"), make_host(name="lab3", address="10.200.0.13")
    otto = make_user("otto", "operator", password=PASSWORD)
    run = make_run(server, make_device(server), make_pg_install(server), client_hosts=[lab2, lab3],
                   state=RunState.MEASURING, queued_by=otto, duration_s=10, warmup_s=0,
                   started_at=datetime.now(UTC) - timedelta(seconds=20))  # fmt: skip
    live.reset_run_stream(run.pk)
    live.publish(run.pk, "state", {"state": "measuring", "label": "measuring", "at": datetime.now(UTC).isoformat()})
    for second in range(1, 7):
        publish_second(run, second)
    with signed_in(web_server, "otto", f"/runs/{run.pk}/", height=1100) as (page, violations, errors):
        lengths = "window.benchlabCharts.tps.data.datasets.map((d) => d.data.length)"
        wait_until(page, f"JSON.stringify({lengths}) === '[6,6,6,6]'", timeout_ms=15_000)
        labels = page.evaluate("window.benchlabCharts.tps.data.datasets.map((d) => d.label)")
        dashed = page.evaluate("window.benchlabCharts.tps.data.datasets.map((d) => (d.borderDash || []).length > 0)")
        tooltip = hover_chart(page, "tps", 4, 0.97)
        page.screenshot(path=str(ARTIFACTS / "run-page-two-clients-live.png"), full_page=True)
        # Another second: on every line.
        publish_second(run, 7)
        wait_until(page, f"JSON.stringify({lengths}) === '[7,7,7,7]'", timeout_ms=10_000)
        newest = page.evaluate("window.benchlabCharts.tps.data.datasets.map((d) => d.data.at(-1).y)")

        # It ends: the finished page draws the same lines from what was stored, and each client's figures.
        in_another_thread(lambda: store_results(run))
        live.publish(run.pk, "state", {"state": "done", "label": "done", "at": datetime.now(UTC).isoformat()})
        page.wait_for_selector("#run-clients-table", timeout=15_000)
        wait_until(page, f"JSON.stringify({lengths}) === '[10,10,10,10]'", timeout_ms=10_000)
        finished_lines = page.evaluate(
            "window.benchlabCharts.tps.data.datasets.filter((d) => d.client).map((d) => [d.client, d.data[0].y])"
        )
        cells = "(n) => [...document.querySelectorAll(`#run-client-${n} > *`)].map((c) => c.textContent.trim())"
        rows = [page.evaluate(f"({cells})({n})") for n in (1, 2)]
        note = text(page, "#run-clients-note")
        page.locator("#run-clients").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "run-page-two-clients-done.png"), full_page=True)

    assert labels == ["all 2 client hosts (tps)", "latency (ms)", "lab2 (tps)", "lab3 (tps)"], labels
    assert dashed == [False, False, True, True]
    assert "throughput: 1,008 tps" in tooltip["body"] or "throughput: 1008 tps" in tooltip["body"], tooltip
    assert any(line.startswith("client lab2: 404") for line in tooltip["body"]), tooltip
    assert any(line.startswith("client lab3: 604") for line in tooltip["body"]), tooltip
    assert newest == [1014.0, 2.0, 407.0, 607.0]
    assert finished_lines == [["lab2", 401.0], ["lab3", 601.0]]
    assert rows[0] == ["lab2", "bench_1", "405.0", "405.5", "2.000", "1.900 / 3.100 / 4.200", "0.081", "exited 0"], rows
    assert rows[1][:4] == ["lab3", "bench_2", "605.0", "605.5"], rows
    assert "each against its own database" in note and "within 1.7 ms of each other" in note, note
    assert not violations, violations
    assert not errors, errors
