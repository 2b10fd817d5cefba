"""The separate warm-up run (seed 004) without a lab: its fields refused beside themselves naming
what is allowed, swept by campaigns and named in "what differs", its command, its seconds kept
apart from the measurement's; and the CPU metrics and the side-by-side table seed 004 reads."""

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from runs.bench.services.lab_specs import benchmark_spec
from runs.bench.services.observer import RunObserver
from runs.bench.services.os_series import os_means
from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.spec_labels import spec_value
from runs.bench.specs import RunSpec
from runs.campaigns.matrix import expand
from runs.campaigns.selectors.results import campaign_statistics, side_by_side
from runs.compare.metrics import cpu_busy_pct, cpu_iowait_pct
from runs.forms.campaigns import MatrixForm
from runs.lab.benchmark.warmup import warmup_options
from runs.lab.options import RunOptions
from runs.lab.pgbench.commands import Connection, run_command
from runs.models import Campaign, CampaignConfiguration, Host, Run, RunState, RunWarmupSample
from runs.tests.bench.test_pgbench_options_queueing import base_spec as queueing_spec
from runs.tests.bench.test_pgbench_options_queueing import form, lab1
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_host, make_run, make_user

pytestmark = pytest.mark.django_db

REFUSED = [
    ({"warmup_run_s": 700_000}, "warmup_run_s", "warm-up run (s) must be between 0 and 604800 (7 days); got 700000."),
    ({"warmup_run_s": 5, "warmup_run_clients": 0}, "warmup_run_clients",
     "warm-up run clients must be between 1 and 10000; got 0."),
    ({"warmup_run_clients": 4}, "warmup_run_clients", "Warm-up run clients need a warm-up run: set warm-up run (s)"),
]  # fmt: skip


def base_spec(host: Host, **changes: object) -> RunSpec:
    return queueing_spec(host).replace(**changes)


@pytest.mark.parametrize("changes, field, message", REFUSED)
def test_the_form_and_the_api_refuse_a_bad_warm_up_run_beside_its_field_and_queue_nothing(
    client_for: ClientFactory, changes: dict[str, object], field: str, message: str
) -> None:
    host = lab1()
    otto: Client = client_for("otto")
    api = APIClient()
    api.force_authenticate(make_user("ulla", "operator"))

    page = otto.post(reverse("run-new"), form(host, **changes))
    body = form(host, rate_limit_tps=None, random_seed=None, warmup_run_clients=None) | changes
    answer = api.post("/api/runs/", body, format="json")

    errors = page.context["form"].errors
    assert page.status_code == 400 and any(message in e for e in errors.get(field, [])), errors
    assert answer.status_code == 400 and any(message in e for e in answer.json().get(field, [])), answer.json()
    assert not Run.objects.exists()


def test_a_warm_up_run_is_refused_with_several_client_hosts() -> None:
    host = lab1()
    clients = [make_host(name=f"c{n}", runs_clients=True).pk for n in (1, 2)]

    errors = spec_errors(base_spec(host, warmup_run_s=5, client_host_ids=tuple(clients)), Inventory.load())

    assert errors["warmup_run_s"] == [
        "A warm-up run is for pgbench on the server or on one client host; with 2 client hosts set it to 0."
    ]
    assert "warmup_run_s" not in spec_errors(base_spec(host, warmup_run_s=5, warmup_run_clients=1), Inventory.load())


def test_a_warm_up_run_is_pgbenchs_and_refused_for_sysbench() -> None:
    host = lab1()
    sysbench = base_spec(host, driver="sysbench", workload="oltp_read_only", threads=1, warmup_run_s=5)

    errors = spec_errors(sysbench, Inventory.load())

    assert errors["warmup_run_s"] == [
        "A warm-up run is pgbench's; sysbench warms up within its run: set warm-up (s) instead, and warm-up "
        "run (s) to 0."
    ]
    assert "warmup_run_s" not in spec_errors(sysbench.replace(warmup_run_s=0), Inventory.load())


def test_a_queued_warm_up_run_reaches_the_lab_spec_and_its_command(client_for: ClientFactory) -> None:
    response = client_for("otto").post(reverse("run-new"), form(lab1(), clients=8, threads=4, warmup_run_s=30,
                                                                   warmup_run_clients=2))  # fmt: skip

    run = Run.objects.get()
    spec = benchmark_spec(run)
    options = warmup_options(spec.run, spec.warmup_run_s, spec.warmup_run_clients)
    command = run_command("/b", Connection(host="/s", port=1), options, "/r/warmup")

    assert response.status_code == 302 and (spec.warmup_run_s, spec.warmup_run_clients) == (30, 2)
    assert command[command.index("-c") : command.index("-c") + 6] == ["-c", "2", "-j", "2", "-M", "prepared"]
    assert command[command.index("-T") + 1] == "30" and "--aggregate-interval=1" in command
    assert "--log-prefix=/r/warmup/pgbench_log" in command and not any("sampling" in arg for arg in command)
    assert spec.run.clients == 8 and spec.run.log_sampling_rate == 1.0  # the measurement's own
    assert spec_value(run, "warmup_run_s", with_label=True) == "warm-up run 30 s"
    assert spec_value(run, "warmup_run_clients", with_label=True) == "warm-up run 2 clients"


def test_warm_up_options_keep_the_measurements_workload_and_default_to_its_clients() -> None:
    measured = RunOptions(builtin="select-only", clients=20, threads=4, duration_s=300, rate_tps=100.0)

    assert warmup_options(measured, 60, None) == RunOptions(
        builtin="select-only", clients=20, threads=4, duration_s=60, rate_tps=100.0, log_sampling_rate=None
    )
    assert (warmup_options(measured, 60, 1).clients, warmup_options(measured, 60, 1).threads) == (1, 1)


def test_campaigns_sweep_the_warm_up_run_and_name_it_in_what_differs() -> None:
    host = lab1()
    page = MatrixForm(data={"warmup_run_s": "0, 30", "warmup_run_clients": "1, 4"})
    assert page.is_valid(), page.errors

    cells = expand(base_spec(host), page.variables(), Inventory.load())

    assert [cell.label for cell in cells] == [
        "no warm-up run · warm-up run 1 clients", "no warm-up run · warm-up run 4 clients",
        "warm-up run 30 s · warm-up run 1 clients", "warm-up run 30 s · warm-up run 4 clients",
    ]  # fmt: skip
    assert [cell.valid for cell in cells] == [False, False, True, True]  # clients without a warm-up run
    assert cells[0].reasons()[0].startswith("warmup run clients: Warm-up run clients need a warm-up run")
    assert cells[2].spec.differences(cells[3].spec) == ("warmup_run_clients",)


def test_the_warm_up_runs_seconds_are_its_own_series_not_the_measurements() -> None:
    host = lab1()
    run = make_run(host, host.devices.get(), host.pg_installs.get(), state=RunState.WARMING_UP, warmup_run_s=5)
    observer = RunObserver(run)

    observer.line("warmup", "progress: 1.0 s, 2784.9 tps, lat 1.416 ms stddev 0.543, 0 failed")
    observer.line("warmup", "progress: 1.0 s, 2790.0 tps, lat 1.400 ms stddev 0.500, 0 failed")  # read again
    observer.line("warmup", "starting vacuum...end.")

    assert list(run.warmup_samples.values_list("second", "tps", "latency_ms")) == [(1, 2790.0, 1.4)]
    assert not run.samples.exists()
    assert observer.log_tail[-1] == "starting vacuum...end."


def test_cpu_busy_and_iowait_are_vmstats_means() -> None:
    # vmstat over three seconds: idle 10, 20, 60 (mean 30), iowait 70, 60, 20 (mean 50).
    means = os_means({"vmstat": {"id": [10.0, 20.0, 60.0], "wa": [70.0, 60.0, 20.0], "us": [15.0, 15.0, 15.0]}})

    run = Run(os_means=means)

    assert cpu_busy_pct(run) == pytest.approx(70.0) and cpu_iowait_pct(run) == pytest.approx(50.0)
    assert cpu_busy_pct(Run(os_means={})) is None and cpu_iowait_pct(Run(os_means={"vmstat": {"wa": None}})) is None


def test_the_campaign_shows_tps_latency_cache_cpu_and_util_side_by_side(client_for: ClientFactory) -> None:
    host = lab1()
    campaign = Campaign.objects.create(name="seed 004", base_spec={}, created_by=make_user("olga", "operator"))
    fits, exceeds = (
        CampaignConfiguration.objects.create(campaign=campaign, index=i, label=label, spec={})
        for i, label in enumerate(["scale 40", "scale 3200"])
    )
    figures = {fits: [(1000.0, 90.0, 50.0), (1200.0, 94.0, 30.0)], exceeds: [(300.0, 60.0, 10.0)]}
    for configuration, values in figures.items():
        for tps, hit, idle in values:
            make_run(host, host.devices.get(), host.pg_installs.get(), campaign=campaign, configuration=configuration,
                     steady_tps_mean=tps, latency_avg_ms=20000 / tps, cache_hit_pct=hit, device_util_pct=99.0,
                     os_means={"vmstat": {"id": idle, "wa": 80.0 - idle}})  # fmt: skip

    table = side_by_side(campaign_statistics(campaign, list(Run.objects.all()), 0))

    assert table is not None
    assert [m.key for m in table.metrics] == ["steady_tps", "latency_avg", "cache_hit", "cpu_busy", "cpu_iowait",
                                              "util"]  # fmt: skip
    assert [label for label, _ in [(c.label, m) for c, m in table.rows]] == ["scale 40", "scale 3200"]
    assert table.rows[0][1] == pytest.approx([1100.0, 18.333333, 92.0, 60.0, 40.0, 99.0])
    assert table.rows[1][1] == pytest.approx([300.0, 66.666667, 60.0, 90.0, 70.0, 99.0])
    page = client_for("vera").get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    shown = " ".join(page.split('id="side-by-side-table">', 1)[1].split("</table>", 1)[0].split())
    assert "<th>CPU busy (100 - vmstat idle, mean) (%)</th><th>CPU iowait (vmstat wa, mean) (%)</th>" in shown
    assert "<tr><td>scale 3200</td><td>300.00</td><td>66.67</td><td>60.00</td><td>90.00</td><td>70.00</td>" in shown


def test_a_finished_runs_page_says_what_its_warm_up_run_did_apart_from_its_results(client_for: ClientFactory) -> None:
    host = lab1()
    run = make_run(host, host.devices.get(), host.pg_installs.get(), clients=20, warmup_run_s=8, warmup_run_clients=10,
                   environment={"warmup_run": {"tps": 501.25, "latency_avg_ms": 19.9}})  # fmt: skip
    RunWarmupSample.objects.bulk_create(RunWarmupSample(run=run, second=s, tps=500.0, latency_ms=20.0) for s in (1, 2))

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    caption = " ".join(page.split('id="warmup-run-caption">', 1)[1].split("</figcaption>", 1)[0].split())
    assert caption == (
        "Warm-up run, 10 clients, 8 seconds, in the same cluster right before the measurement below: 2 seconds "
        "reported; pgbench's summary 501.3 tps, 19.900 ms mean latency. Not in the results or the statistics."
    ), caption
    assert "8 s warm-up run at 10 clients, then 5 s" in page
