"""The regression watch end to end, through a real worker on the virtual lab: a nightly schedule
fired by a fake clock (each round at the next 02:00 its crontab gives, a day apart), the HDD-like
disk three times as slow and a kernel upgrade on its host after round 5; the change point is found
at round 6 with the kernel change beside it, stored, and told to the schedule's webhook.

Each round is one configuration (the HDD, tpcb-like at scale 1, one client, 2 s) repeated twice.
Measured here: about 45 tps a round before, about 15 after (an ext4 commit is about four of the
disk's delays). The detector needs five rounds on either side (runs.watch.changepoints.MIN_SIZE):
the template campaign and rounds 1-5 before, rounds 6-10 after.

The round's "moved beyond noise" notice is not asserted here: the same end-of-round task sends it
(runs.watch.services.hooks), and runs/tests/notify/test_notifications.py tells it to a local
receiver from stored rounds. Here, twice-repeated rounds give Welch's test one or two degrees of
freedom, which missed the threefold drop under CI's load (29 Nov 2026); three repetitions made
this test 500 s of CI's 33 minutes."""

import itertools
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command
from django.utils import timezone

from runs.bench.specs import RunSpec
from runs.campaigns.services.campaigns import CampaignPlan, campaign_create
from runs.management.commands.lab_register import lab_host_name
from runs.models import Campaign, ChangePointState, Host, Run, RunState, StoredChangePoint
from runs.notify.services.subscribers import subscriber_add
from runs.schedules.crontab import crontab_of, next_firing
from runs.schedules.services.rounds import schedule_fire
from runs.schedules.services.schedules import schedule_create
from runs.tests.factories import make_user
from runs.tests.notify.receiver import Receiver, webhook_receiver
from runs.tests.notify.test_notifications import verified
from runs.tests.virtual_lab import PG_BIN, VirtualLab, lab_command
from runs.tests.workers import CeleryWorker

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

ROUNDS = 10
CHANGED_AFTER = 5
NEW_KERNEL = "6.1.0-99-amd64"
NIGHTLY = crontab_of({"minute": "0", "hour": "2", "day_of_month": "*", "month_of_year": "*", "day_of_week": "*"})


@contextmanager
def clock_at(moment: datetime) -> Iterator[None]:
    """What beat's firing sees as now (a day after the last: not a second beat's firing of it)."""
    with mock.patch.object(timezone, "now", return_value=moment):
        yield


@contextmanager
def drift_undone(lab: VirtualLab) -> Iterator[None]:
    """The session's lab as it was, whatever the test does to lab1."""
    try:
        yield
    finally:
        lab_command(lab.lab_id, "hdd-slow", "lab1", "off")
        lab_command(lab.lab_id, "kernel", "lab1", "off")


def wait_for_end(campaign: Campaign) -> None:
    deadline = time.monotonic() + 180
    runs = Run.objects.filter(campaign=campaign)
    while runs.exclude(state__in=["done", "failed", "cancelled"]).exists():
        assert time.monotonic() < deadline, f"{campaign.name} did not end within 3 minutes"
        time.sleep(0.5)
    assert [r.state for r in runs] == [RunState.DONE] * runs.count(), [(r.pk, r.error) for r in runs]


def told(receiver: Receiver, kind: str) -> list[dict]:
    return [json.loads(r.body) for r in receiver.received if json.loads(r.body)["type"] == kind]


def told_about(receiver: Receiver, metric: str) -> bool:
    return any(p["change_point"]["metric"] == metric for p in told(receiver, "change_point"))


def test_a_slowed_disk_after_round_5_is_found_at_round_6_with_the_kernel_change_and_a_webhook_is_told(
    virtual_lab: VirtualLab, celery_worker: CeleryWorker
) -> None:
    call_command("lab_register", "--id", str(virtual_lab.lab_id), stdout=StringIO())
    otto = make_user("otto", "operator")
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab1"))
    base = RunSpec(
        server_host_id=host.pk, device_id=host.devices.get(name="hdd").pk, filesystem="ext4",
        pg_install_id=host.pg_installs.get(bin_dir=PG_BIN).pk, scale=1, clients=1, threads=1, duration_s=2,
        warmup_s=0, settle_s=0, log_sampling_rate=None,
    )  # fmt: skip
    template = campaign_create(
        plan=CampaignPlan(name="hdd nightly", description="", base=base, variables=[], repetitions=2), by=otto
    )
    wait_for_end(template)
    schedule = schedule_create(campaign=template, name="hdd nightly", crontab=NIGHTLY, by=otto)
    zone = timezone.get_default_timezone()
    now = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    fired_at, rounds = [], []
    with webhook_receiver() as receiver, drift_undone(virtual_lab):
        subscribed = subscriber_add(schedule=schedule, webhook_url=receiver.url, actor=otto)
        for number in range(1, ROUNDS + 1):
            now = next_firing(NIGHTLY, now, zone)
            with clock_at(now):
                firing = schedule_fire(schedule_id=schedule.pk)  # as beat's task calls it, at 02:00
            assert firing is not None and firing.campaign is not None, firing and firing.message
            fired_at.append(now)
            rounds.append(firing.campaign)
            wait_for_end(firing.campaign)
            if number == CHANGED_AFTER:
                lab_command(virtual_lab.lab_id, "hdd-slow", "lab1", "3")
                lab_command(virtual_lab.lab_id, "kernel", "lab1", NEW_KERNEL)
        deadline = time.monotonic() + 90
        while not told_about(receiver, "steady_tps"):
            # The round's end is watched in a task of its own, then each notice delivered in
            # another: a smaller change point (the disk's utilisation, say) may be told first.
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        change_points = told(receiver, "change_point")
        signed = all(verified(subscribed.secret, r.headers, r.body) for r in receiver.received)

    # Beat's times by the crontab (celery's reckoning): 02:00, a day apart; each firing queued a
    # campaign of its own, linked to the schedule (none taken for a second beat's).
    assert [(at.hour, at.minute) for at in fired_at] == [(2, 0)] * ROUNDS
    assert {b - a for a, b in itertools.pairwise(fired_at)} == {timedelta(days=1)}
    assert [c.schedule_round for c in rounds] == list(range(1, ROUNDS + 1))
    tps = [Run.objects.filter(campaign=c).first().tps for c in [template, *rounds]]  # type: ignore[union-attr]
    stored = StoredChangePoint.objects.get(metric="steady_tps")
    # The template is the series' round 1: schedule round 5 is its round 6, round 6 its round 7.
    assert (stored.round_before, stored.round_after) == (CHANGED_AFTER + 1, CHANGED_AFTER + 2), tps
    assert stored.round_ref == f"c{rounds[CHANGED_AFTER].pk}" and stored.change < -0.3, (stored.change, tps)
    assert stored.state == ChangePointState.OPEN and stored.p < 0.01
    assert f"kernel changed from {os.uname().release} to {NEW_KERNEL}" in stored.drift, stored.drift
    # Told: the change point (once), signed.
    assert [p["change_point"]["metric"] for p in change_points].count("steady_tps") == 1, change_points
    assert any(p["change_point"]["round_after"] == CHANGED_AFTER + 2 for p in change_points)
    assert signed, len(receiver.received)
