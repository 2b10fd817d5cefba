"""Campaigns without a lab: the form's preview and queueing, what is written (all or nothing),
the interleaved queue order, cancel and retry, and the statistics the page shows."""

import pytest
from django.test import Client
from django.urls import reverse

from runs.bench.specs import RunSpec
from runs.campaigns.matrix import Variable
from runs.campaigns.presets import preset_initial
from runs.campaigns.selectors.results import adaptive_status, campaign_runs, campaign_statistics
from runs.campaigns.services.adaptive import campaign_advance
from runs.campaigns.services.campaigns import (
    CampaignPlan,
    CampaignRefused,
    campaign_cancel,
    campaign_create,
    campaign_retry_failed,
)
from runs.compare.stats import compare, summarise
from runs.models import AuditEvent, Campaign, Host, Run, RunState
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, run_form_fields

pytestmark = pytest.mark.django_db


def lab1() -> Host:
    host = make_host(name="lab1")
    make_device(host, name="hdd", kind="hdd", path="/dev/disk/by-id/ata-HDD_1", wipe_allowed=True)
    make_device(host, name="ram", kind="ram", path="/dev/disk/by-id/ram-1", wipe_allowed=True)
    make_pg_install(host)
    return host


def plan_on(host: Host, variables: list[Variable], repetitions: int = 3, **fields: object) -> CampaignPlan:
    base = RunSpec(
        server_host_id=host.pk, device_id=host.devices.get(name="hdd").pk, filesystem="ext4",
        pg_install_id=host.pg_installs.get().pk, scale=1, clients=2, threads=1, duration_s=5,
    )  # fmt: skip
    return CampaignPlan(name="study", description="", base=base, variables=variables, repetitions=repetitions, **fields)  # type: ignore[arg-type]


def place(run: Run) -> tuple[int, int]:
    """(configuration index, repetition) of a campaign's run."""
    assert run.configuration is not None and run.repetition is not None
    return run.configuration.index, run.repetition


def devices_and_options(host: Host) -> list[Variable]:
    ram, hdd = host.devices.get(name="ram"), host.devices.get(name="hdd")
    return [Variable("device", (ram.pk, hdd.pk)), Variable("mount_options", ("noatime", "(none)"))]


def test_a_campaign_queues_every_configuration_interleaved_round_by_round(users: dict) -> None:
    host = lab1()

    campaign = campaign_create(plan=plan_on(host, devices_and_options(host)), by=users["otto"])

    runs = list(Run.objects.filter(campaign=campaign).order_by("pk"))
    assert [place(run) for run in runs] == [(c, r) for r in (1, 2, 3) for c in range(4)]
    assert {run.state for run in runs} == {RunState.QUEUED}
    assert runs[0].mount_options == "noatime" and runs[1].mount_options == ""
    fifth = runs[4].configuration
    # The configuration's spec, but for the random seed each run has of its own (picked when queued).
    assert fifth is not None and RunSpec.from_run(runs[4]).replace(random_seed=None) == RunSpec.from_json(fifth.spec)
    assert len({run.random_seed for run in runs}) == len(runs)
    event = AuditEvent.objects.get(action="campaign_queued")
    assert event.message == "4 configurations × 3 = 12 runs" and event.actor_name == "otto"


def test_a_shuffled_campaign_records_its_seed(users: dict) -> None:
    host = lab1()

    campaign = campaign_create(plan=plan_on(host, devices_and_options(host), order="shuffled"), by=users["otto"])

    assert campaign.seed is not None
    first_round = [place(run)[0] for run in Run.objects.filter(campaign=campaign, repetition=1)]
    assert sorted(first_round) == [0, 1, 2, 3]


def test_a_campaign_nothing_of_which_can_run_writes_nothing(users: dict) -> None:
    host = lab1()

    with pytest.raises(CampaignRefused, match="No combination of the values can run"):
        campaign_create(plan=plan_on(host, [Variable("filesystem", ("directory",))]), by=users["otto"])

    assert not Campaign.objects.exists() and not Run.objects.exists()


def test_rejected_combinations_are_recorded_with_the_campaign(users: dict) -> None:
    host = lab1()
    variables = [Variable("filesystem", ("ext4", "btrfs")), Variable("mount_options", ("data=writeback",))]

    campaign = campaign_create(plan=plan_on(host, variables, repetitions=1), by=users["otto"])

    assert campaign.configurations.count() == 1
    (rejected,) = campaign.rejected
    assert rejected["label"] == "btrfs · data=writeback" and "mount options" in rejected["reasons"][0]


def test_cancelling_a_configuration_cancels_only_its_runs(users: dict) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host)), by=users["otto"])
    configuration = campaign.configurations.get(index=2)

    assert campaign_cancel(campaign=campaign, by=users["otto"], configuration=configuration) == 3

    states = dict(Run.objects.filter(campaign=campaign).values_list("pk", "state"))
    cancelled = set(
        Run.objects.filter(campaign=campaign, state=RunState.CANCELLED).values_list("configuration__index", flat=True)
    )
    assert cancelled == {2} and list(states.values()).count(RunState.CANCELLED) == 3

    event = AuditEvent.objects.get(action="campaign_cancelled")
    assert event.message == f"configuration 2 ({configuration.label}): 3 runs" and event.actor_name == "otto"

    assert campaign_cancel(campaign=campaign, by=users["otto"]) == 9
    assert set(Run.objects.filter(campaign=campaign).values_list("state", flat=True)) == {RunState.CANCELLED}


def test_retrying_queues_the_failed_repetitions_again_at_the_end(users: dict) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host), repetitions=2), by=users["otto"])
    runs = list(Run.objects.filter(campaign=campaign).order_by("pk"))
    Run.objects.filter(pk__in=[runs[1].pk, runs[6].pk]).update(state=RunState.FAILED, error="mkfs failed")
    Run.objects.filter(pk__in=[r.pk for r in runs if r.pk not in (runs[1].pk, runs[6].pk)]).update(state=RunState.DONE)

    assert campaign_retry_failed(campaign=campaign, by=users["otto"]) == 2
    assert campaign_retry_failed(campaign=campaign, by=users["otto"]) == 0  # their latest attempts are queued
    (event,) = AuditEvent.objects.filter(action="campaign_retried")
    assert event.message == f"2 failed runs queued again: {runs[1].pk}, {runs[6].pk}"

    again = list(Run.objects.filter(campaign=campaign, pk__gt=runs[-1].pk).order_by("pk"))
    assert [(r.configuration_id, r.repetition, r.state) for r in again] == [
        (runs[1].configuration_id, runs[1].repetition, RunState.QUEUED),
        (runs[6].configuration_id, runs[6].repetition, RunState.QUEUED),
    ]


def client_lab(*names: str) -> list[Host]:
    hosts = [make_host(name=name, address=f"10.200.0.{30 + n}") for n, name in enumerate(names)]
    for host in hosts:
        make_pg_install(host)
    return hosts


def clients_of(run: Run) -> list[tuple[str, int, str]]:
    return list(run.run_clients.values_list("host__name", "position", "database"))


def test_a_campaign_sweeps_client_hosts_one_or_several_and_queues_them_with_their_runs(users: dict) -> None:
    host = lab1()
    lab2, lab3 = client_lab("lab2", "lab3")
    sweep = [Variable("client_host", (None, lab2.pk, [lab2.pk, lab3.pk], f"{lab3.pk}+{lab2.pk}"))]

    campaign = campaign_create(plan=plan_on(host, sweep, repetitions=1), by=users["otto"])

    runs = list(Run.objects.filter(campaign=campaign).order_by("pk"))
    assert [run.configuration.label for run in runs if run.configuration] == [
        "pgbench on the server", "pgbench on lab2", "pgbench on lab2+lab3", "pgbench on lab3+lab2"
    ]  # fmt: skip
    assert [clients_of(run) for run in runs] == [
        [],
        [("lab2", 1, "bench")],
        [("lab2", 1, "bench_1"), ("lab3", 2, "bench_2")],
        [("lab3", 1, "bench_1"), ("lab2", 2, "bench_2")],
    ]


def test_a_campaign_stored_with_one_client_host_runs_again_with_it(users: dict) -> None:
    host = lab1()
    (lab2,) = client_lab("lab2")
    campaign = campaign_create(
        plan=plan_on(host, [Variable("client_host", (lab2.pk,))], repetitions=1), by=users["otto"]
    )
    configuration = campaign.configurations.get()
    old_spec = {
        name: value for name, value in configuration.spec.items() if name not in ("client_host_ids", "shared_database")
    }
    configuration.spec = old_spec | {"client_host_id": lab2.pk}  # as campaigns stored it before runs had several
    configuration.save()
    Run.objects.filter(campaign=campaign).update(state=RunState.FAILED)

    assert campaign_retry_failed(campaign=campaign, by=users["otto"]) == 1

    again = Run.objects.filter(campaign=campaign, state=RunState.QUEUED).get()
    assert clients_of(again) == [("lab2", 1, "bench")]


def test_statistics_are_scipys_over_done_runs_and_failed_runs_are_counted_apart(users: dict) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host)[:1]), by=users["otto"])
    tps = {(0, 1): 100.0, (0, 2): 102.0, (0, 3): 98.0, (1, 1): 50.0, (1, 2): 51.0, (1, 3): None}
    for run in Run.objects.filter(campaign=campaign):
        value = tps[place(run)]
        state = RunState.DONE if value is not None else RunState.FAILED
        Run.objects.filter(pk=run.pk).update(state=state, steady_tps_mean=value, error="" if value else "PANIC")

    table = campaign_statistics(campaign, campaign_runs(campaign), baseline_index=1)[0]

    assert table.metric.key == "steady_tps"
    ram, hdd = table.rows
    assert ram.summary == summarise([100.0, 102.0, 98.0]) and hdd.summary == summarise([50.0, 51.0])
    assert hdd.comparison is None  # the baseline
    expected = compare([50.0, 51.0], {"ram": [100.0, 102.0, 98.0]}, "higher_is_faster")["ram"]
    assert ram.comparison == expected and ram.comparison.verdict == "faster"
    assert (hdd.failed, ram.failed) == (1, 0) and hdd.failures[0].endswith(": PANIC")


def test_the_statistics_table_gives_p_values_as_the_verdicts_do_never_a_rounded_zero(
    users: dict, client_for: ClientFactory
) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host)[:1]), by=users["otto"])
    tps = {(0, 1): 100.0, (0, 2): 102.0, (0, 3): 98.0, (1, 1): 50.0, (1, 2): 51.0, (1, 3): 49.0}
    for run in Run.objects.filter(campaign=campaign):
        Run.objects.filter(pk=run.pk).update(state=RunState.DONE, steady_tps_mean=tps[place(run)])

    page = client_for("vera").get(reverse("campaign-detail", args=[campaign.pk]), {"baseline": 1}).content.decode()

    # Welch: t = 50 / sqrt(4/3 + 1/3) = 38.7 on 2.94 degrees of freedom, p = 4.5e-5 (the page
    # showed "0.000"); Mann-Whitney's exact p for 3 against 3 with no overlap is 2/20 = 0.1, its
    # smallest: the page says the test cannot decide instead of showing it.
    tps_table = page.split('id="metric-steady_tps"', 1)[1].split("</table>", 1)[0]
    ram_row = next(row for row in tps_table.split("<tr>") if "<td>lab1:ram" in row)
    cells = [cell.split("</td>", 1)[0] for cell in ram_row.split("<td>")[1:]]
    assert cells[-3] == "&lt; 0.001" and cells[-1] == "0", ram_row
    assert "3 runs each: Mann-Whitney cannot reach p &lt; 0.1 — use ≥ 4 repetitions" in cells[-2], ram_row


@pytest.fixture
def otto(client_for: ClientFactory) -> Client:
    return client_for("otto")


def campaign_form(host: Host, **changes: object) -> dict[str, object]:
    base = run_form_fields(host, host.devices.get(name="hdd"), host.pg_installs.get(), duration_s=5, warmup_s=0)
    fields: dict[str, object] = {f"base-{name}": value for name, value in base.items()}
    fields |= {"name": "hdd vs ram", "description": "", "repetitions": 3, "order": "interleaved", "seed": ""}
    ram, hdd = host.devices.get(name="ram"), host.devices.get(name="hdd")
    fields |= {"device": [ram.pk, hdd.pk], "mount_options": "noatime\ndata=writeback", "action": "preview"}
    return fields | changes


def test_the_form_previews_the_matrix_and_the_wall_time_before_queueing_anything(otto: Client) -> None:
    host = lab1()

    response = otto.post(reverse("campaign-new"), campaign_form(host))

    page = response.content.decode()
    assert response.status_code == 200, page
    assert "4 configurations × 3 = 12 runs" in page and "Estimated wall time" in page
    assert "<td>lab1:ram</td>" in page and "<td>noatime</td>" in page and "Queue 12 runs" in page
    assert not Run.objects.exists()


def test_queueing_from_the_form_creates_the_campaign_and_shows_its_page(otto: Client) -> None:
    host = lab1()

    response = otto.post(reverse("campaign-new"), campaign_form(host, action="queue"))

    campaign = Campaign.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("campaign-detail", args=[campaign.pk])
    assert Run.objects.filter(campaign=campaign).count() == 12
    page = otto.get(response["Location"]).content.decode()
    assert "0 of 12" in page and "lab1:hdd · data=writeback" in page


def test_the_form_s_base_run_takes_two_client_hosts_sharing_one_database(otto: Client) -> None:
    host = lab1()
    lab2, lab3 = client_lab("lab2", "lab3")
    form = campaign_form(host, action="queue", repetitions=1) | {
        "base-client_hosts": [lab2.pk, lab3.pk],
        "base-shared_database": "on",
    }

    assert otto.post(reverse("campaign-new"), form).status_code == 302

    campaign = Campaign.objects.get()
    assert campaign.base_spec["client_host_ids"] == [lab2.pk, lab3.pk] and campaign.base_spec["shared_database"]
    runs = list(Run.objects.filter(campaign=campaign))
    assert len(runs) == 4 and all(run.shared_database for run in runs)
    assert {tuple(clients_of(run)) for run in runs} == {(("lab2", 1, "bench"), ("lab3", 2, "bench"))}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"repetitions": 0}, "greater than or equal to 1"),
        ({"scale": "ten"}, "scale: &#x27;ten&#x27; is not a whole number"),
        ({"base-clients": 0}, "clients must be between 1 and 10000; got 0."),
        ({"seed": "7"}, "A seed only means something with the shuffled order."),
        ({"mount_options": "nodatacow"}, "No combination of the values can run"),
        (
            {
                "scale": ", ".join(map(str, range(1, 101))),
                "clients": ", ".join(map(str, range(1, 101))),
                "mount_options": "\n".join(f"commit={n}" for n in range(1, 101)),
                "device": [],
            },
            "100 × 100 × 100 values make 1,000,000 combinations: a campaign&#x27;s values may make at most 1,000",
        ),
    ],
)
def test_bad_campaign_input_says_what_is_wrong_and_queues_nothing(otto: Client, changes: dict, message: str) -> None:
    host = lab1()

    response = otto.post(reverse("campaign-new"), campaign_form(host, action="queue", **changes))

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Campaign.objects.exists() and not Run.objects.exists()


# The page-size preset asks its host for sources: test_after_builds fakes that and previews it.
@pytest.mark.parametrize("preset", ["ssd-vs-hdd", "mount-options", "read-only"])
def test_every_preset_fills_a_form_whose_preview_has_runnable_configurations(otto: Client, preset: str) -> None:
    host = lab1()
    make_pg_install(host, bin_dir="/opt/pg4k/bin", version="15.19", block_size=4096)

    page = otto.get(reverse("campaign-new"), {"preset": preset, "host": str(host.pk)}).content.decode()
    assert 'name="name"' in page and 'id="preset-hosts"' in page
    initial = preset_initial(preset, [host.pk])
    assert initial["hosts"] == [host.pk] and "Host: lab1 (chosen)." in initial["campaign"]["description"]
    base = run_form_fields(host, host.devices.get(name="hdd"), host.pg_installs.all()[0]) | initial["base"]
    data = {f"base-{name}": "" if value is None else value for name, value in base.items()}
    data |= {"repetitions": 3, "order": "interleaved", "description": ""} | initial["campaign"]
    data |= {name: value for name, value in initial["matrix"].items()} | {"action": "preview", "preset": preset}

    response = otto.post(reverse("campaign-new"), data)

    assert response.status_code == 200, response.content.decode()
    assert "Queue " in response.content.decode()
    assert otto.get(reverse("campaign-new"), {"preset": "nonsense"}).status_code == 400


def finish_round(campaign: Campaign, tps: dict[int, list[float]]) -> None:
    """Mark the campaign's unfinished runs done, configuration by configuration, with these tps."""
    for run in Run.objects.filter(campaign=campaign, state=RunState.QUEUED).order_by("pk"):
        index, _ = place(run)
        Run.objects.filter(pk=run.pk).update(state=RunState.DONE, steady_tps_mean=tps[index].pop(0))


def test_an_adaptive_campaign_repeats_only_the_configurations_whose_interval_is_still_wide(users: dict) -> None:
    host = lab1()
    plan = plan_on(host, devices_and_options(host)[:1], repetitions=2, target_ci_pct=2.0, max_repetitions=4)
    campaign = campaign_create(plan=plan, by=users["otto"])

    # ram: 100, 100.5: mean 100.25, sd 0.354, CI half width 12.706 * 0.354 / √2 = 3.18 (±3.2 %): too wide.
    # hdd: 50, 50: no spread, ±0 %: done.
    finish_round(campaign, {0: [100.0, 100.5], 1: [50.0, 50.0]})
    assert campaign_advance(campaign_id=campaign.pk) == 1
    assert campaign_advance(campaign_id=campaign.pk) == 0  # its round is not over yet
    (extra,) = Run.objects.filter(campaign=campaign, state=RunState.QUEUED)
    assert place(extra) == (0, 3) and extra.queued_by == users["otto"]

    finish_round(campaign, {0: [100.2]})
    status = {c.index: s for c, s in adaptive_status(campaign, campaign_runs(campaign)).items()}
    assert status[1].reason == "CI ±0.0 % is within ±2 % after 2 runs" and not status[1].repeating
    # 100, 100.5, 100.2: mean 100.233, sd 0.252, half width 4.303 * 0.252 / √3 = 0.625 (±0.6 %).
    assert status[0].reason == "CI ±0.6 % is within ±2 % after 3 runs" and not status[0].repeating
    assert campaign_advance(campaign_id=campaign.pk) == 0


def test_an_adaptive_campaign_stops_at_its_maximum_and_after_a_cancel(users: dict) -> None:
    host = lab1()
    plan = plan_on(host, devices_and_options(host)[:1], repetitions=2, target_ci_pct=0.5, max_repetitions=3)
    campaign = campaign_create(plan=plan, by=users["otto"])
    finish_round(campaign, {0: [100.0, 110.0], 1: [50.0, 60.0]})
    assert campaign_advance(campaign_id=campaign.pk) == 2
    finish_round(campaign, {0: [90.0], 1: [40.0]})

    assert campaign_advance(campaign_id=campaign.pk) == 0
    status = adaptive_status(campaign, campaign_runs(campaign))
    assert [s.reason.split(" (")[0] for s in status.values()] == ["stopped at the maximum of 3 repetitions"] * 2

    other = campaign_create(plan=plan, by=users["otto"])
    campaign_cancel(campaign=other, by=users["otto"], configuration=other.configurations.get(index=1))
    finish_round(other, {0: [100.0, 110.0]})
    assert campaign_advance(campaign_id=other.pk) == 0  # cancelled in part: not started again


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"target_ci_pct": 2}, "max_repetitions", "needs a maximum"),
        ({"max_repetitions": 5}, "target_ci_pct", "needs a target CI"),
        ({"target_ci_pct": 2, "max_repetitions": 2, "repetitions": 3}, "max_repetitions", "at least the 3"),
        ({"target_ci_pct": 2, "max_repetitions": 5, "repetitions": 1}, "repetitions", "at least 2 repetitions"),
    ],
)
def test_adaptive_settings_are_checked(otto: Client, fields: dict, field: str, message: str) -> None:
    host = lab1()

    response = otto.post(reverse("campaign-new"), campaign_form(host, action="queue", **fields))

    assert response.status_code == 400 and message in response.content.decode()
    assert not Campaign.objects.exists()
