"""The fio canaries of a campaign: queued before its runs, and again once nothing more of it will
run (runs.campaigns.services.canary), through the hook a run's end calls (runs.jobs.hooks)."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from runs.baselines.services import baselines
from runs.campaigns.services.campaigns import CampaignRefused, campaign_cancel, campaign_create
from runs.campaigns.services.canary import CANARY_SETTINGS, campaign_canaries_after, canary_settings
from runs.jobs.hooks import job_ended
from runs.models import BaselineRole, Campaign, Device, DeviceBaseline, Run, RunState
from runs.tests.campaigns.test_campaigns import devices_and_options, finish_round, lab1, plan_on
from runs.tests.conftest import ClientFactory
from runs.tests.method.test_canary import canary
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db


def canaries(campaign: Campaign, role: BaselineRole) -> list[DeviceBaseline]:
    return list(campaign.baselines.filter(role=role).order_by("pk"))


def end_every_run(campaign: Campaign, state: RunState = RunState.DONE) -> Run:
    """Every unfinished run of the campaign ended; the last one, as the hook would be given it."""
    Run.objects.filter(campaign=campaign, state=RunState.QUEUED).update(state=state, steady_tps_mean=100.0)
    last = Run.objects.filter(campaign=campaign).order_by("pk").last()
    assert last is not None
    return last


def test_a_campaign_with_a_canary_measures_each_device_before_and_again_after_its_last_run(users: dict) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host)[:1], repetitions=2, fio_canary=True),
                               by=users["otto"])  # fmt: skip
    before = canaries(campaign, BaselineRole.CANARY_BEFORE)
    ram, hdd = host.devices.get(name="ram"), host.devices.get(name="hdd")
    assert campaign.fio_canary and [c.device_id for c in before] == [ram.pk, hdd.pk]
    assert before[0].jobs == list(CANARY_SETTINGS.jobs) and before[0].runtime_s == CANARY_SETTINGS.runtime_s
    first_run = Run.objects.filter(campaign=campaign).order_by("pk").first()
    assert first_run is not None and all(c.pk and c.created_at <= first_run.created_at for c in before)

    some = Run.objects.filter(campaign=campaign).order_by("pk").first()
    Run.objects.filter(pk=some.pk).update(state=RunState.DONE)  # type: ignore[union-attr]
    job_ended(Run.objects.get(pk=some.pk))  # type: ignore[union-attr]
    assert canaries(campaign, BaselineRole.CANARY_AFTER) == []  # three runs still to come

    job_ended(end_every_run(campaign))
    after = canaries(campaign, BaselineRole.CANARY_AFTER)
    assert [c.device_id for c in after] == [ram.pk, hdd.pk]
    assert [(c.size_bytes, c.runtime_s, c.ramp_s, c.jobs) for c in after] == [
        (c.size_bytes, c.runtime_s, c.ramp_s, c.jobs) for c in before
    ]
    assert all(c.state == "queued" and c.queued_by == users["otto"] for c in after)
    job_ended(Run.objects.filter(campaign=campaign).last())  # type: ignore[arg-type]
    assert campaign_canaries_after(campaign_id=campaign.pk) == 0  # once only


def test_a_small_device_gets_a_canary_no_larger_than_itself() -> None:
    assert canary_settings(Device(capacity_bytes=40 * 2**20 + 5)).size_bytes == 40 * 2**20
    assert canary_settings(Device(capacity_bytes=None)) == CANARY_SETTINGS


def test_an_adaptive_campaign_gets_its_canary_after_only_once_no_round_follows(users: dict) -> None:
    host = lab1()
    plan = plan_on(host, devices_and_options(host)[:1], repetitions=2, target_ci_pct=2.0, max_repetitions=4,
                   fio_canary=True)  # fmt: skip
    campaign = campaign_create(plan=plan, by=users["otto"])
    finish_round(campaign, {0: [100.0, 100.5], 1: [50.0, 50.0]})  # ram's interval too wide: a third round

    job_ended(Run.objects.filter(campaign=campaign).order_by("pk").last())  # type: ignore[arg-type]
    assert Run.objects.filter(campaign=campaign, state=RunState.QUEUED).count() == 1
    assert canaries(campaign, BaselineRole.CANARY_AFTER) == []

    finish_round(campaign, {0: [100.2]})  # within ±2 % now: no round after it
    job_ended(Run.objects.filter(campaign=campaign).order_by("pk").last())  # type: ignore[arg-type]
    assert Run.objects.filter(campaign=campaign, state=RunState.QUEUED).count() == 0
    assert len(canaries(campaign, BaselineRole.CANARY_AFTER)) == 2


def test_a_cancelled_campaign_gets_no_canary_after(users: dict) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, [], repetitions=2, fio_canary=True), by=users["otto"])
    campaign_cancel(campaign=campaign, by=users["otto"])

    job_ended(Run.objects.filter(campaign=campaign).order_by("pk").last())  # type: ignore[arg-type]
    assert set(Run.objects.filter(campaign=campaign).values_list("state", flat=True)) == {RunState.CANCELLED}
    assert canaries(campaign, BaselineRole.CANARY_AFTER) == []
    assert {c.state for c in canaries(campaign, BaselineRole.CANARY_BEFORE)} == {"cancelled"}


def test_a_campaign_without_the_option_gets_no_canary(users: dict) -> None:
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, [], repetitions=1, fio_baseline=True), by=users["otto"])
    job_ended(end_every_run(campaign))
    assert list(campaign.baselines.values_list("role", flat=True)) == [BaselineRole.BASELINE]


def test_a_device_fio_may_not_measure_refuses_the_campaign_and_queues_nothing(
    users: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = lab1()
    monkeypatch.setattr(baselines, "baseline_device_refusal", lambda device: "fio may not measure it.")
    with pytest.raises(CampaignRefused, match=r"No fio canary of .*hdd can be queued: fio may not measure it"):
        campaign_create(plan=plan_on(host, [], repetitions=1, fio_canary=True), by=users["otto"])
    assert not Campaign.objects.exists() and not DeviceBaseline.objects.exists()


def measured_campaign(by: User) -> Campaign:
    """A campaign over ram and hdd whose runs are done and whose canaries ran before and after:
    ram's within the margin (+5 % IOPS), hdd's random reads 40 % slower."""
    host = lab1()
    campaign = campaign_create(plan=plan_on(host, devices_and_options(host)[:1], repetitions=1, fio_canary=True),
                               by=by)  # fmt: skip
    job_ended(end_every_run(campaign))
    ram, hdd = host.devices.get(name="ram"), host.devices.get(name="hdd")
    figures = {
        (ram.pk, BaselineRole.CANARY_BEFORE): (50000.0, 0.018), (ram.pk, BaselineRole.CANARY_AFTER): (52500.0, 0.018),
        (hdd.pk, BaselineRole.CANARY_BEFORE): (185.0, 5.4), (hdd.pk, BaselineRole.CANARY_AFTER): (111.0, 9.0),
    }  # fmt: skip
    for row in campaign.baselines.all():
        role = BaselineRole(row.role)
        made = canary(role, *figures[(row.device_id, role)])
        DeviceBaseline.objects.filter(pk=row.pk).update(state="done", results=made.results, target_mode="raw")
    return campaign


def test_the_campaign_page_and_api_flag_the_device_that_changed(users: dict, client_for: ClientFactory) -> None:
    campaign = measured_campaign(users["otto"])
    hdd = campaign.baselines.get(role=BaselineRole.CANARY_AFTER, device__name="hdd").device

    page = client_for("vera").get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    section = page.split('id="campaign-canary"')[1].split("</section>")[0]
    hdd_table = section.split(f'id="canary-device-{hdd.pk}"')[1].split("</table>")[0]
    assert '<strong class="canary-status canary-changed">changed</strong>' in hdd_table
    assert '<td class="num">185</td>' in hdd_table and '<td class="num">111</td>' in hdd_table and "−40 %" in hdd_table
    assert hdd_table.count(">changed</span>") == 3  # the random reads' IOPS, bandwidth and mean latency
    assert section.count(">changed</span>") == 3  # ram's +5 % is not flagged
    method = page.split('id="method-canary"')[1].split("</tr>")[0]
    assert ">warning<" in method and "rand-read-qd1 IOPS 185 → 111 (−40 %)" in method

    after = campaign.baselines.get(role=BaselineRole.CANARY_AFTER, device=hdd)
    baseline_page = client_for("vera").get(reverse("baseline-detail", args=[after.pk])).content.decode()
    assert f"campaign {campaign.pk}</a>, its canary after the campaign" in baseline_page

    detail = api_client(users["vera"]).get(f"/api/campaigns/{campaign.pk}/").json()
    assert detail["fio_canary"] is True and detail["canary"]["status"] == "warning"
    by_device = {row["device_id"]: row for row in detail["canary"]["devices"]}
    assert by_device[hdd.pk]["status"] == "changed" and len(by_device) == 2
    iops = next(f for f in by_device[hdd.pk]["figures"] if f["job"] == "rand-read-qd1" and f["figure"] == "iops")
    assert (iops["before"], iops["after"], iops["changed"]) == (185.0, 111.0, True)
    assert iops["change_pct"] == pytest.approx(-40.0)


def test_the_api_queues_a_campaign_with_a_canary(users: dict) -> None:
    from runs.tests.campaigns.test_campaign_api import body

    host = lab1()
    created = api_client(users["otto"]).post("/api/campaigns/", body(host, fio_canary=True), format="json")
    assert created.status_code == 201, created.content
    campaign = Campaign.objects.get(pk=created.json()["id"])
    assert campaign.fio_canary and len(canaries(campaign, BaselineRole.CANARY_BEFORE)) == 2
    bad = api_client(users["otto"]).post("/api/campaigns/", body(host, fio_canary="sometimes"), format="json")
    assert bad.status_code == 400 and "fio_canary" in bad.json()


def test_a_canary_is_not_taken_for_the_device_s_baseline(users: dict) -> None:
    from runs.baselines.selectors import baselines_for_devices, device_chart, latest_done

    campaign = measured_campaign(users["otto"])
    hdd = campaign.baselines.get(role=BaselineRole.CANARY_AFTER, device__name="hdd").device
    # Three jobs of a few seconds: the device's history lists them, its figures and claims do not use them.
    assert latest_done(hdd) is None and device_chart(hdd)["points"] == []
    assert [row.baseline for row in baselines_for_devices([hdd.pk])] == [None]
