"""The facts drift follows, probed on the virtual lab: each of a host's disks (loop devices, the
HDD-like one on a FUSE-backed image) by its /dev/disk/by-id link, and its PostgreSQL's build."""

import pytest

from runs.bench.services.drift_facts import drift_facts
from runs.lab.host.probe import probe_device, probe_pg_build
from runs.lab.host.run_user import ensure_run_user
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.virtual_lab import PG_BIN, VirtualLab

pytestmark = [pytest.mark.lab, pytest.mark.django_db]


def test_each_lab_disk_is_probed_by_its_link(virtual_lab: VirtualLab) -> None:
    transport = virtual_lab.connect("lab1")
    try:
        for kind, disk in virtual_lab.host("lab1")["disks"].items():
            facts = probe_device(transport, disk["link"])
            assert facts.node.startswith("/dev/loop") and facts.disk == facts.node, kind
            assert facts.size_bytes == disk["size_bytes"], kind
            assert facts.backing_file == disk["image"], kind  # a loop device says what it is
            assert (facts.model, facts.serial, facts.firmware) == ("", "", ""), kind  # it has none
        assert probe_device(transport, "/var/tmp").node == ""  # a directory is no block device
    finally:
        transport.close()


def test_a_runs_drift_facts_on_the_lab(virtual_lab: VirtualLab) -> None:
    disk = virtual_lab.host("lab1")["disks"]["ssd"]
    host = make_host(name="lab1")
    run = make_run(host, make_device(host, path=disk["link"]), make_pg_install(host, bin_dir=PG_BIN))
    transport = virtual_lab.connect("lab1")
    try:
        ensure_run_user(transport)  # as probe_host, which a run calls first, does
        build = probe_pg_build(transport, PG_BIN)
        found = drift_facts(transport, run)
    finally:
        transport.close()
    assert build.version.startswith("PostgreSQL 15") and "--with-openssl" in build.configure
    assert found["device"]["size_bytes"] == disk["size_bytes"] and found["device"]["node"].startswith("/dev/loop")
    assert found["postgresql"] == {"pg_config_version": build.version, "configure": build.configure}
