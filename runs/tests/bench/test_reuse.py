"""When a run reuses, keeps or discards a campaign's storage and database (bench.services.reuse),
decided from the queue and the device's record, without a lab."""

import pytest

from runs.bench.services.reuse import record_kept, reuse_plan
from runs.campaigns.matrix import Variable
from runs.campaigns.services.campaigns import campaign_create
from runs.lab.storage.kept import KeptSetup
from runs.models import Device, Host, Run
from runs.tests.campaigns.test_campaigns import lab1, plan_on

pytestmark = pytest.mark.django_db

SETUP = KeptSetup(
    mountpoint="/mnt/benchlab/benchlab-run-1-abcdef012345",
    fstype="ext4",
    device_node="/dev/loop7",
    mount_options="rw,relatime",
    mkfs_command="mkfs.ext4 -F -q /dev/loop7",
    base_dir="/mnt/benchlab/benchlab-run-1-abcdef012345/postgres",
    pg_bin_dir="/usr/lib/postgresql/15/bin",
    database="bench",
    scale=1,
)


def campaign_runs_on(host: Host, fresh_database: bool = False) -> list[Run]:
    """Two configurations that differ only in clients: one setup, four runs in a row."""
    plan = plan_on(host, [Variable("clients", ("1", "2"))], repetitions=2, fresh_database=fresh_database)
    campaign = campaign_create(plan=plan, by=None)  # type: ignore[arg-type]
    return list(Run.objects.filter(campaign=campaign).select_related("campaign", "server_host").order_by("pk"))


def test_a_run_keeps_its_setup_when_the_next_in_line_shares_it_and_that_run_reuses_it() -> None:
    first, second, *_ = campaign_runs_on(lab1())

    plan = reuse_plan(first)
    assert plan.keep and plan.reuse is None and plan.discard == []

    record_kept(first, SETUP)
    again = reuse_plan(second)
    assert again.reuse == SETUP and again.reused_from == first.pk and again.keep and again.discard == []


def test_the_last_run_of_a_setup_keeps_nothing() -> None:
    runs = campaign_runs_on(lab1())
    Run.objects.filter(pk__in=[r.pk for r in runs[:3]]).update(state="done")

    assert not reuse_plan(runs[3]).keep


def test_a_fresh_database_campaign_never_keeps_nor_reuses() -> None:
    first, second, *_ = campaign_runs_on(lab1(), fresh_database=True)
    record_kept(first, SETUP)  # as if left by an older campaign's run

    plan = reuse_plan(second)
    assert not plan.keep and plan.reuse is None and [d.pk for d, _ in plan.discard] == [first.device_id]


def test_a_setup_of_another_campaign_or_device_or_setup_is_discarded() -> None:
    host = lab1()
    other_campaign = campaign_runs_on(host)[0]
    run = campaign_runs_on(host)[0]
    record_kept(other_campaign, SETUP)
    ram = host.devices.get(name="ram")
    Device.objects.filter(pk=ram.pk).update(kept_setup={"signature": [], "campaign": run.campaign_id, "run": 1,
                                                        "setup": SETUP.as_json()})  # fmt: skip

    plan = reuse_plan(run)

    assert plan.reuse is None
    assert sorted(device.name for device, _ in plan.discard) == ["hdd", "ram"]


def test_a_run_outside_campaigns_keeps_nothing_and_an_unreadable_record_is_forgotten() -> None:
    host = lab1()
    run = campaign_runs_on(host)[0]
    Run.objects.filter(pk=run.pk).update(campaign=None)
    run.refresh_from_db()
    Device.objects.filter(pk=run.device_id).update(kept_setup={"setup": {"mountpoint": "/etc"}})

    plan = reuse_plan(run)

    assert not plan.keep and plan.reuse is None and plan.discard == []
    assert Device.objects.get(pk=run.device_id).kept_setup is None
