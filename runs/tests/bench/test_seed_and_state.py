"""A run's random seed and its declared state before measuring (issue 32, points 5 and 6): the seed
picked when none is given and carried over by "Run again" and a campaign's retry; the new fields
refused with what is allowed by the page, the API and campaigns alike; the spec's round trips."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from runs.bench.spec_checks import Inventory
from runs.bench.specs import CONFIGURATION_FIELDS, RunSpec
from runs.campaigns.matrix import MatrixError, Variable, check_variables, expand
from runs.campaigns.selectors.estimates import reuses
from runs.campaigns.services.campaigns import CampaignPlan, campaign_create, campaign_retry_failed
from runs.compare.differences import what_differs
from runs.compare.query import ComparisonQuery, Group
from runs.models import Device, Host, PgInstall, Run, RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user, run_form_fields
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db


def lab1() -> tuple[Host, Device, PgInstall]:
    host = make_host(name="lab1")
    device = make_device(host, name="hdd", kind="hdd", path="/dev/disk/by-id/ata-HDD_1", wipe_allowed=True,
                         capacity_bytes=2**30)  # fmt: skip
    return host, device, make_pg_install(host)


def operator() -> Client:
    client = Client()
    client.force_login(make_user("otto", "operator"))
    return client


def test_it_picks_a_seed_when_none_is_given_and_keeps_one_that_is() -> None:
    host, device, pg = lab1()
    otto = operator()

    picked = otto.post(reverse("run-new"), run_form_fields(host, device, pg, random_seed=""))
    state = {"cache_state": "cold", "data_state": "frozen", "checkpoint_before": "", "settle_s": 0}
    given = otto.post(reverse("run-new"), run_form_fields(host, device, pg, random_seed="42", **state))

    assert picked.status_code == given.status_code == 302
    first, second = Run.objects.order_by("pk")
    assert first.random_seed is not None and 0 <= first.random_seed < 2**31
    assert (second.random_seed, second.cache_state, second.data_state) == (42, "cold", "frozen")
    assert (second.checkpoint_before, second.settle_s) == (False, 0)
    assert (first.cache_state, first.data_state, first.checkpoint_before, first.settle_s) == ("warm", "reused", True, 5)


def test_run_again_offers_the_same_seed_and_state() -> None:
    host, device, pg = lab1()
    run = make_run(host, device, pg, random_seed=987654, cache_state="cold", data_state="fresh", settle_s=3)

    page = operator().get(reverse("run-new") + f"?again={run.pk}").content.decode()

    assert re.search(r'<input[^>]*name="random_seed"[^>]*value="987654"', page)
    assert re.search(r'<option value="cold" selected>', page)
    assert re.search(r'<option value="fresh" selected>', page)
    assert re.search(r'<input[^>]*name="settle_s"[^>]*value="3"', page)


BAD_VALUES = [
    ({"cache_state": "lukewarm"}, "cache_state", "cache state must be one of warm, cold; got lukewarm."),
    ({"data_state": "stale"}, "data_state", "data state must be one of reused, fresh, frozen; got stale."),
    ({"random_seed": -1}, "random_seed", "random seed must be between 0 and 1e+15; got -1."),
    ({"settle_s": 601}, "settle_s", "settle (s) must be between 0 and 600; got 601."),
]


@pytest.mark.parametrize(("changes", "field", "message"), BAD_VALUES)
def test_bad_state_or_seed_values_are_refused_naming_what_is_allowed(changes: dict, field: str, message: str) -> None:
    host, device, pg = lab1()
    page = operator().post(reverse("run-new"), run_form_fields(host, device, pg, **changes))
    body = {name: value for name, value in run_form_fields(host, device, pg, **changes).items() if value != ""}
    api = api_client(make_user("ada", "operator")).post("/api/runs/", body, format="json")

    assert page.status_code == 400 and page.context["form"].errors[field] == [message]
    assert api.status_code == 400 and api.json()[field] == [message], api.json()
    assert not Run.objects.exists()


def test_the_api_takes_the_state_and_seed_and_defaults_them_like_the_page() -> None:
    host, device, pg = lab1()
    body = {name: value for name, value in run_form_fields(host, device, pg).items() if value != ""}
    for name in ("random_seed", "cache_state", "data_state", "checkpoint_before", "settle_s"):
        body.pop(name, None)
    ada = api_client(make_user("ada", "operator"))

    defaulted = ada.post("/api/runs/", body, format="json").json()
    state = {"cache_state": "cold", "data_state": "frozen", "checkpoint_before": False, "settle_s": 2}
    given = ada.post("/api/runs/", body | {"random_seed": 7} | state, format="json").json()

    assert (defaulted["cache_state"], defaulted["data_state"], defaulted["checkpoint_before"]) == (
        "warm",
        "reused",
        True,
    )
    assert defaulted["settle_s"] == 5 and isinstance(defaulted["random_seed"], int)
    assert [given[k] for k in ("random_seed", "cache_state", "data_state", "checkpoint_before", "settle_s")] == [
        7, "cold", "frozen", False, 2
    ]  # fmt: skip


def test_the_spec_carries_the_state_and_seed_through_json_and_the_run() -> None:
    host, device, pg = lab1()
    state = {"cache_state": "cold", "data_state": "frozen", "checkpoint_before": False, "settle_s": 0}
    spec = RunSpec(server_host_id=host.pk, device_id=device.pk, filesystem="ext4", pg_install_id=pg.pk,
                   random_seed=7, **state)  # type: ignore[arg-type]  # fmt: skip

    run = Run.objects.create(**spec.run_fields())

    assert RunSpec.from_json(spec.as_json()) == spec
    assert RunSpec.from_run(run) == spec
    with pytest.raises(ValueError, match="random_seed must be a whole number or null"):
        RunSpec.from_json(spec.as_json() | {"random_seed": "7"})


def base_spec(host: Host, device: Device, pg: PgInstall, **changes: object) -> RunSpec:
    return RunSpec(server_host_id=host.pk, device_id=device.pk, filesystem="ext4", pg_install_id=pg.pk, scale=1,
                   clients=2, threads=1, duration_s=5).replace(**changes)  # fmt: skip


def test_campaigns_sweep_the_state_and_the_seed_and_refuse_what_they_cannot_take() -> None:
    host, device, pg = lab1()
    sweep = [Variable("cache_state", ("warm", "cold")), Variable("data_state", ("fresh", "frozen")),
             Variable("random_seed", (None, "3")), Variable("settle_s", (0, "10"))]  # fmt: skip

    cells = expand(base_spec(host, device, pg), sweep, Inventory.load())

    assert all(cell.valid for cell in cells) and len(cells) == 16
    assert {(c.spec.cache_state, c.spec.data_state, c.spec.random_seed, c.spec.settle_s) for c in cells} == {
        (cache, data, seed, settle)
        for cache in ("warm", "cold") for data in ("fresh", "frozen") for seed in (None, 3) for settle in (0, 10)
    }  # fmt: skip
    assert cells[1].label == "warm cache · fresh data · seed picked when queued · settle ≤ 10 s"
    for variable, message in [
        (Variable("cache_state", ("hot",)), "cache state: 'hot' is not one of warm, cold"),
        (Variable("data_state", ("old",)), "data state: 'old' is not one of reused, fresh, frozen"),
        (Variable("random_seed", ("x",)), "random seed: 'x' is not a whole number; give the seed as a whole number"),
    ]:
        with pytest.raises(MatrixError, match=re.escape(message)):
            check_variables([variable])


def test_a_campaign_retry_runs_again_with_the_failed_runs_seed_unless_told_otherwise(
    users: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, device, pg = lab1()
    plan = CampaignPlan(name="seeds", description="", base=base_spec(host, device, pg), variables=[], repetitions=2)
    campaign = campaign_create(plan=plan, by=users["otto"])
    first, second = Run.objects.filter(campaign=campaign).order_by("pk")
    Run.objects.filter(pk__in=[first.pk, second.pk]).update(state=RunState.FAILED)

    assert first.random_seed is not None and second.random_seed is not None
    assert campaign_retry_failed(campaign=campaign, by=users["otto"]) == 2
    again = list(Run.objects.filter(campaign=campaign, state=RunState.QUEUED).order_by("pk"))
    assert [(r.repetition, r.random_seed) for r in again] == [(1, first.random_seed), (2, second.random_seed)]

    Run.objects.filter(pk__in=[r.pk for r in again]).update(state=RunState.FAILED)
    monkeypatch.setattr("runs.bench.services.runs.pick_seed", lambda: 5)
    assert campaign_retry_failed(campaign=campaign, by=users["otto"], new_seeds=True) == 2
    assert list(Run.objects.filter(campaign=campaign, state=RunState.QUEUED).values_list("random_seed", flat=True)) == [
        5, 5
    ]  # fmt: skip


def test_the_api_retry_asks_for_new_seeds_with_true_or_false_only(users: dict) -> None:
    host, device, pg = lab1()
    plan = CampaignPlan(name="seeds", description="", base=base_spec(host, device, pg), variables=[], repetitions=1)
    campaign = campaign_create(plan=plan, by=users["otto"])
    Run.objects.filter(campaign=campaign).update(state=RunState.FAILED)

    refused = api_client(users["otto"]).post(
        f"/api/campaigns/{campaign.pk}/retry/", {"new_seeds": "yes"}, format="json"
    )

    assert refused.status_code == 400 and "new_seeds" in refused.json()
    assert Run.objects.filter(campaign=campaign).count() == 1


def test_only_runs_that_ask_for_reused_data_take_over_a_kept_setup() -> None:
    host, device, pg = lab1()
    reused = base_spec(host, device, pg)
    fresh, frozen = reused.replace(data_state="fresh"), reused.replace(data_state="frozen")

    assert reuses(reused, reused, fresh_database=False)
    assert not reuses(reused, fresh, fresh_database=False) and not reuses(fresh, reused, fresh_database=False)
    assert not reuses(frozen, frozen, fresh_database=False)


def test_repetitions_with_their_own_seeds_are_one_configuration_and_no_confound() -> None:
    host, device, pg = lab1()
    runs = [make_run(host, device, pg, random_seed=seed) for seed in (1, 2, 3)]

    differences = what_differs([Group(0, (), "all", None, runs)], CONFIGURATION_FIELDS)

    assert "random_seed" not in ComparisonQuery(run_ids=(1,)).grouping
    (seed,) = [d for d in differences if d.key == "random_seed"]
    assert seed.cells == ["1 / 2 / 3"] and not seed.confounded


def test_the_campaign_page_retries_with_the_same_seeds_unless_its_box_is_ticked(
    users: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, device, pg = lab1()
    plan = CampaignPlan(name="seeds", description="", base=base_spec(host, device, pg), variables=[], repetitions=1)
    campaign = campaign_create(plan=plan, by=users["otto"])
    (first,) = Run.objects.filter(campaign=campaign)
    otto = Client()
    otto.force_login(users["otto"])
    monkeypatch.setattr("runs.bench.services.runs.pick_seed", lambda: 5)

    Run.objects.filter(campaign=campaign).update(state=RunState.FAILED)
    page = otto.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    otto.post(reverse("campaign-retry", args=[campaign.pk]))
    Run.objects.filter(campaign=campaign).update(state=RunState.FAILED)
    otto.post(reverse("campaign-retry", args=[campaign.pk]), {"new_seeds": "on"})

    seeds = list(Run.objects.filter(campaign=campaign).order_by("pk").values_list("random_seed", flat=True))
    assert seeds == [first.random_seed, first.random_seed, 5]
    assert re.search(r'<input type="checkbox" name="new_seeds" id="retry-new-seeds">', page)
