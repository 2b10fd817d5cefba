"""The wall-time estimates agree with what a campaign then takes, through a real worker on the
virtual lab: three small campaigns give the host and device their history (each a fresh run and one
that reuses its setup), a second one is previewed (the API's preview, which the form shares),
queued, its page's first estimate read, and its wall time (queued to last run's end) measured.

Each ratio is estimate / actual. Seen on this machine (2 cores shared with other test sessions,
load average 1.8-5.5), 27 Nov 2026, with the RAM disk, scale 1, 2 clients:
- 2 s measured per run: preview 0.78, 0.99, 1.15, 0.98; page 0.77, 0.98, 1.15, 0.98 (the runs'
  fixed cost of about 3 s per run, which the machine's load stretches, weighs most);
- 4 s measured per run (this test): preview 1.07, 1.06, 0.86, 1.08, 1.08, 1.00; page 1.06, 1.05, 0.86,
  1.08, 1.08, 1.00; with the rest of a turn told apart by whether the run keeps its setup: 1.00.
- the same on the HDD-like disk: 1.23 before that change (a run that keeps its setup skips the
  unmount: 3.3 s of rest against 6-7 s), 1.14 after it.
So MARGIN is the issue's ±25 %: the worst seen with 4 s runs was 14 % off. With one campaign of
history (two turns), a CI run on 28 Nov 2026 saw 1.30: its history's turns were stretched by the
load of that moment, and a median of two is their mean. Three campaigns of history make each median
one of three turns. Before this estimator
the page said 45 s of set-up per run until a run had finished (196 s for this campaign of ~25 s,
measured with the old code).
"""

import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from runs.bench.specs import RunSpec
from runs.campaigns.matrix import Variable
from runs.campaigns.services.campaigns import CampaignPlan, campaign_create
from runs.management.commands.lab_register import lab_host_name
from runs.models import Campaign, Host, Run, RunState
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN, VirtualLab
from runs.tests.web.test_api import api_client
from runs.tests.workers import CeleryWorker

MARGIN = 0.25  # the issue's ±25 %; the figures seen on this machine are in the module's docstring
# Campaigns of history before the measured one: each part's median is then over three turns, so
# one turn stretched by a load spike (CI's fresh clone compiling beside it) does not set it.
HISTORIES = 3

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _wait_for(campaign: Campaign) -> float:
    """Seconds from the campaign's queueing to its last run's end."""
    deadline = time.monotonic() + 120
    runs = Run.objects.filter(campaign=campaign)
    while runs.exclude(state__in=["done", "failed", "cancelled"]).exists():
        assert time.monotonic() < deadline, "the campaign did not finish within 2 minutes"
        time.sleep(0.25)
    assert [r.state for r in runs] == [RunState.DONE] * runs.count(), [(r.pk, r.error) for r in runs]
    last = max(run.finished_at for run in runs if run.finished_at)
    return (last - campaign.created_at).total_seconds()


def test_the_preview_the_page_and_the_wall_time_agree(virtual_lab: VirtualLab, celery_worker: CeleryWorker) -> None:
    call_command("lab_register", "--id", str(virtual_lab.lab_id), stdout=StringIO())
    otto = make_user("otto", "operator")
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab1"))
    ram, install = host.devices.get(name="ram"), host.pg_installs.get(bin_dir=PG_BIN)
    base = RunSpec(
        server_host_id=host.pk, device_id=ram.pk, filesystem="ext4", pg_install_id=install.pk, scale=1, clients=2,
        threads=1, duration_s=4, warmup_s=0, log_sampling_rate=None,
    )  # fmt: skip
    clients = [Variable("clients", ("1", "2"))]  # one setup: the first run makes it, the others reuse it
    for number in range(1, HISTORIES + 1):
        history = CampaignPlan(name=f"history {number}", description="", base=base, variables=clients, repetitions=1)
        _wait_for(campaign_create(plan=history, by=otto))

    body = {
        "name": "measured",
        "base": {"server_host": host.pk, "device": ram.pk, "pg_install": install.pk, "filesystem": "ext4",
                 "scale": 1, "clients": 2, "threads": 1, "duration_s": 4, "warmup_s": 0, "log_sampling_rate": None},
        "variables": [{"field": "clients", "values": [1, 2]}],
        "repetitions": 2,
    }  # fmt: skip
    api = api_client(otto)
    preview = api.post("/api/campaigns/", body | {"preview": True}, format="json").json()["estimated_wall_s"]
    created = api.post("/api/campaigns/", body, format="json")
    assert created.status_code == 201, created.json()
    campaign = Campaign.objects.get(pk=created.json()["id"])
    browser = Client()
    browser.force_login(otto)
    page = browser.get(f"/campaigns/{campaign.pk}/").context["progress"].eta_s
    actual = _wait_for(campaign)

    ratios = {"preview": preview / actual, "page": page / actual}
    print(f"actual {actual:.1f} s, preview {preview:.1f} s, page {page:.1f} s, ratios {ratios}")
    assert all(abs(ratio - 1) <= MARGIN for ratio in ratios.values()), (actual, preview, page)
