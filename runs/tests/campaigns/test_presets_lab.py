"""The presets on the virtual lab as `make run` registers it (probed RAM, small loop devices):
each fills a form that validates as it stands, keeps scale ≥ clients, and SSD vs HDD says plainly
that the exceeds-RAM tier cannot run on these devices."""

from io import StringIO

import pytest
from django.core.management import call_command

from runs.campaigns.plans import preset_plan
from runs.campaigns.presets import PRESETS, preset_initial
from runs.management.commands.lab_register import lab_host_name
from runs.models import Host
from runs.tests.virtual_lab import VirtualLab

pytestmark = [pytest.mark.lab, pytest.mark.django_db]


def test_every_preset_fits_the_virtual_lab_and_says_what_it_cannot_run(virtual_lab: VirtualLab) -> None:
    call_command("lab_register", "--id", str(virtual_lab.lab_id), stdout=StringIO())
    lab2 = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab2"))
    assert lab2.memory_bytes, "the probe records each host's RAM"

    # PresetInvalid if a form did not validate. The page-size study has no install until its
    # builds are done (lab2 has none of them): its form says so and offers to build them.
    plans = {name: preset_plan(name, [lab2.pk]) for name in PRESETS if name != "page-size"}
    page_size = preset_initial("page-size", [lab2.pk])
    assert page_size["base"]["server_host"] == lab2.pk and page_size["base"]["pg_install"] is None
    assert page_size["base"]["scale"] >= page_size["base"]["clients"]
    assert "with 2 kB, 4 kB and 8 kB pages: the button below builds them" in page_size["campaign"]["description"]
    description = preset_initial("ssd-vs-hdd", [lab2.pk])["campaign"]["description"]

    for name, plan in plans.items():
        assert plan.base.server_host_id == lab2.pk, name
        cells = [cell for cell in plan.cells() if cell.valid]
        assert cells, name
        if plan.base.workload in ("tpcb-like", "simple-update"):
            assert all(cell.spec.scale >= cell.spec.clients for cell in cells), (name, plan)
    assert f"Host: {lab2.name} (chosen)." in description
    assert ": fits in RAM (" in description
    assert "The does-not-fit-in-RAM tier" in description and "is impossible on these devices" in description
