"""The one wall-time estimator (runs.campaigns.selectors.estimates): measured parts of earlier runs of the same
host and device, the model without them, reuse of a kept setup, and the preview, the campaign
page's first estimate and its time left agreeing (the lab test checks them against the clock:
test_estimates_lab.py)."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from runs.bench.specs import RunSpec
from runs.campaigns.matrix import Variable
from runs.campaigns.selectors.estimates import FAST, MODELS, history, run_estimate
from runs.campaigns.selectors.results import campaign_progress, campaign_runs, plan_wall_estimate
from runs.campaigns.services.campaigns import campaign_create
from runs.models import Device, Host, Run, RunState
from runs.tests.campaigns.test_campaigns import lab1, plan_on
from runs.tests.factories import make_run

pytestmark = pytest.mark.django_db

STAGES = {"hosts": 0.4, "storage": 3.0, "cluster": 2.0, "load": 4.0, "pgbench with metrics": 5.5, "cleanup": 1.0}


def measured_run(host: Host, device: Device, end: float, turn: float, reused: bool = False, **fields: object) -> Run:
    """A done run that ended `end` s ago after a turn of `turn` s (queued at its turn's start)."""
    finished = timezone.now() - timedelta(seconds=end)
    stages = {"kept setup checked": 0.5, "storage": 0.5, "cluster": 1.0, "load": 0.0} if reused else STAGES
    environment = {"stages": stages, "reuse": {"reused_from_run": 1 if reused else None}}
    run = make_run(host, device, host.pg_installs.get(), state=RunState.DONE, environment=environment,
                   started_at=finished - timedelta(seconds=turn - 0.5), finished_at=finished, **fields)  # fmt: skip
    Run.objects.filter(pk=run.pk).update(created_at=finished - timedelta(seconds=turn))
    return run


def spec_on(host: Host, device: str, **fields: object) -> RunSpec:
    values: dict = {"scale": 1, "clients": 2, "threads": 1, "duration_s": 5} | fields
    return RunSpec(server_host_id=host.pk, device_id=host.devices.get(name=device).pk, filesystem="ext4",
                   pg_install_id=host.pg_installs.get().pk, **values)  # fmt: skip


def test_without_history_a_run_is_the_model_of_its_device_kind() -> None:
    host = lab1()
    past = history([host.pk])

    hdd = run_estimate(spec_on(host, "hdd", warmup_s=2), reused=False, past=past)
    ram = run_estimate(spec_on(host, "ram", scale=11), reused=True, past=past)

    model = MODELS[Device.Kind.HDD]
    assert hdd == 2 + 5 + model.setup_fresh_s + model.load_s + model.other_s
    assert ram == 5 + FAST.setup_reused_s + 0 + FAST.other_s  # a reused setup loads nothing


def test_it_adds_the_medians_of_the_measured_parts_of_the_same_host_and_device() -> None:
    host = lab1()
    ram, hdd = host.devices.get(name="ram"), host.devices.get(name="hdd")
    for end, turn in ((100, 20.0), (200, 22.0), (300, 30.0)):  # setup 5, load 4, asked 5: other 6, 8, 16
        measured_run(host, ram, end, turn)
    measured_run(host, hdd, 400, 90.0)  # another device: not this one's
    past = history([host.pk])

    fresh = run_estimate(spec_on(host, "ram", duration_s=60), reused=False, past=past)

    assert fresh == pytest.approx(60 + 5.0 + 4.0 + 8.0)


def test_a_scale_no_run_loaded_adds_the_models_time_per_scale_unit_to_the_nearest() -> None:
    host = lab1()
    measured_run(host, host.devices.get(name="ram"), 100, 20.0, scale=10)
    past = history([host.pk])

    at_10 = run_estimate(spec_on(host, "ram", scale=10), reused=False, past=past)
    at_30 = run_estimate(spec_on(host, "ram", scale=30), reused=False, past=past)

    assert at_30 - at_10 == pytest.approx(20 * FAST.load_per_scale_s)


def test_a_reused_setup_costs_what_reused_runs_took() -> None:
    host = lab1()
    ram = host.devices.get(name="ram")
    measured_run(host, ram, 100, 20.0)  # other: 20 - 9 - 5 = 6
    measured_run(host, ram, 50, 9.0, reused=True)  # setup 2, other 9 - 2 - 5 = 2
    past = history([host.pk])

    reused = run_estimate(spec_on(host, "ram"), reused=True, past=past)

    # The rest from the runs like it (reused, keeping nothing) first: 2, not the median with the fresh one's 6.
    assert reused == pytest.approx(5 + 2.0 + 0 + 2.0)


def test_the_campaign_pages_first_estimate_is_the_previews(users: dict[str, User]) -> None:
    host = lab1()
    ram, hdd = host.devices.get(name="ram"), host.devices.get(name="hdd")
    for end, turn in ((100, 20.0), (200, 22.0)):
        measured_run(host, ram, end, turn)
        measured_run(host, hdd, end + 50, turn * 3)
    plan = plan_on(host, [Variable("device", (ram.pk, hdd.pk)), Variable("clients", ("1", "2"))], repetitions=2)
    specs = [cell.spec for cell in plan.cells() if cell.valid]

    preview = plan_wall_estimate(specs, plan.repetitions).seconds
    campaign = campaign_create(plan=plan, by=users["otto"])
    page = campaign_progress(campaign, campaign_runs(campaign)).eta_s

    assert page == pytest.approx(preview)
    # Clients 1 → 2 on a device share a setup: the first keeps it, the second reuses it; the
    # devices alternate round by round.
    assert preview == pytest.approx(sum(
        run_estimate(spec, reused, history([host.pk]), keeps)
        for spec, reused, keeps in zip(specs * 2, [False, True] * 4, [True, False] * 4, strict=True)
    ))  # fmt: skip


def test_the_time_left_counts_a_running_run_less_what_it_has_taken(users: dict[str, User]) -> None:
    host = lab1()
    measured_run(host, host.devices.get(name="hdd"), 100, 40.0)
    campaign = campaign_create(plan=plan_on(host, [Variable("clients", ("1", "2"))], repetitions=1), by=users["otto"])
    runs = campaign_runs(campaign)
    whole = campaign_progress(campaign, runs).eta_s
    assert whole is not None
    started = timezone.now() - timedelta(seconds=10)
    Run.objects.filter(pk=runs[0].pk).update(state=RunState.MEASURING, started_at=started)

    left = campaign_progress(campaign, campaign_runs(campaign)).eta_s

    assert left == pytest.approx(whole - 10, abs=0.5)


def test_a_turn_starts_at_the_previous_runs_end_not_at_a_queueing_long_before() -> None:
    host = lab1()
    ram = host.devices.get(name="ram")
    measured_run(host, ram, 100, 20.0)  # other: 20 - 9 - 5 = 6
    waited = measured_run(host, ram, 60, 20.0)  # ended 60 s ago, 40 s after the one before: 40 - 9 - 5 = 26
    Run.objects.filter(pk=waited.pk).update(created_at=timezone.now() - timedelta(hours=1))  # queued long before

    past = history([host.pk])

    assert sorted(turn.other for turn in past.turns[host.pk]) == pytest.approx([6.0, 26.0], abs=0.1)  # not 3600 s
