"""An install that is gone from its host (the host rebuilt since its probe) fails a run first,
before anything touches the run's storage, and the probe marks it missing until it is back."""

import os
import shutil
from collections.abc import Iterator
from contextlib import closing
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.models import Q

from runs.inventory.services.probe import host_probe
from runs.lab.postgres.installs import SERVER_PROGRAMS
from runs.models import AuditAction, AuditEvent, Host, PgInstall, RunState
from runs.tests.bench.test_run_execution import lab_inventory, new_run
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN, VirtualLab
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
__all__ = ["lab_inventory"]  # a fixture of test_run_execution's, used here


@pytest.fixture
def custom_installs(lab_inventory: dict[str, Host], virtual_lab: VirtualLab) -> Iterator[dict[str, PgInstall]]:
    """An install of lab1's and one of lab2's in the inventory, each in a directory of this test's
    (the lab's hosts share this machine's files): their programs are links to the lab's
    PostgreSQL 15. lab2's says it is newer than the packaged one: a client's pgbench comes from it."""
    installs = {}
    for name in ("lab1", "lab2"):
        root = Path(f"/var/tmp/benchlab-test-install-{virtual_lab.lab_id}-{os.getpid()}-{name}")
        (root / "bin").mkdir(parents=True)
        for program in SERVER_PROGRAMS:
            (root / "bin" / program).symlink_to(f"{PG_BIN}/{program}")
        host = lab_inventory[name]
        version = "15.99" if name == "lab2" else host.pg_installs.get(bin_dir=PG_BIN).version
        label = f"PG 15 (custom, {name})"
        installs[name] = PgInstall.objects.create(host=host, bin_dir=f"{root}/bin", version=version, label=label)
    yield installs
    for install in installs.values():
        shutil.rmtree(Path(install.bin_dir).parent)


@pytest.fixture
def custom_install(custom_installs: dict[str, PgInstall]) -> PgInstall:
    return custom_installs["lab1"]


def moved_away(install: PgInstall) -> Path:
    """The install's directory renamed, as a rebuilt host no longer has it."""
    return Path(install.bin_dir).rename(f"{install.bin_dir}.moved")


def test_a_run_on_an_install_gone_from_its_host_fails_before_its_storage_is_touched(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], virtual_lab: VirtualLab, custom_install: PgInstall
) -> None:
    lab1 = lab_inventory["lab1"]
    device = lab1.devices.get(name="ram")
    with closing(virtual_lab.connect("lab1")) as on_lab1:
        on_lab1.run(["mkfs.ext4", "-F", "-q", "-L", "KEEPME", device.path])
        moved_away(custom_install)

        run = wait_until_finished(new_run(lab1, make_user("otto", "operator"), pg_install=custom_install))
        label = on_lab1.run(["blkid", "-p", "-s", "LABEL", "-o", "value", device.path], check=False).stdout.strip()
        mounts = on_lab1.run(["cat", "/proc/mounts"]).stdout

    assert run.state == RunState.FAILED
    assert run.error == (
        f"PG 15 (custom, lab1) is not on {lab1.name} any more: {custom_install.bin_dir} has no "
        "initdb, pg_ctl, postgres, psql, createdb, pgbench. Nothing of the run was done on its storage. "
        f"Re-probe {lab1.name} (admin: Hosts, select it, action “Probe now”; or `manage.py probe_host {lab1.name}`) "
        "so the inventory marks the install missing, or install it there again"
    )
    formatted = AuditEvent.objects.filter(
        Q(object_type="device", object_id=str(device.pk)) | Q(object_type="run", object_id=str(run.pk)),
        action=AuditAction.DEVICE_FORMATTED,
    )
    assert not formatted.exists(), "the audit log has a mkfs of the run's device"
    assert label == "KEEPME", "the device was formatted"
    assert run.run_key not in mounts
    assert list(run.transitions.values_list("state", flat=True)) == ["queued", "failed"]
    assert run.failed_step == RunState.QUEUED  # before preparing its storage


def test_a_run_whose_client_host_s_pgbench_is_gone_fails_before_its_storage_is_touched(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host], custom_installs: dict[str, PgInstall]
) -> None:
    lab1, lab2, gone = lab_inventory["lab1"], lab_inventory["lab2"], custom_installs["lab2"]
    moved_away(gone)

    run = wait_until_finished(new_run(lab1, make_user("otto", "operator"), client_hosts=(lab2,)))

    assert run.state == RunState.FAILED
    assert run.error.startswith(f"PG 15 (custom, lab2) is not on {lab2.name} any more: {gone.bin_dir} has no pgbench.")
    assert run.failed_step == RunState.QUEUED  # before preparing its storage
    assert not AuditEvent.objects.filter(action=AuditAction.DEVICE_FORMATTED).exists()


def test_the_probe_marks_an_install_gone_and_unmarks_it_when_found_again(
    lab_inventory: dict[str, Host], custom_install: PgInstall
) -> None:
    lab1 = lab_inventory["lab1"]
    host_probe(host=lab1)
    custom_install.refresh_from_db()
    assert custom_install.missing_since is None  # there, though not where the probe looks for installs

    moved = moved_away(custom_install)
    host_probe(host=lab1)
    custom_install.refresh_from_db()
    first_missing = custom_install.missing_since
    said = StringIO()
    call_command("probe_host", lab1.name, stdout=said)  # what the run's failure offers
    custom_install.refresh_from_db()

    assert first_missing is not None and custom_install.missing_since == first_missing  # since the first probe
    assert lab1.pg_installs.get(bin_dir=PG_BIN).missing_since is None
    assert f"  {custom_install.bin_dir}: {custom_install.missing_note}\n" in said.getvalue()
    assert custom_install.missing_note.startswith(f"missing from {lab1.name} since ")
    probed = AuditEvent.objects.filter(object_type="host", object_id=str(lab1.pk)).latest("pk")
    assert probed.message.endswith(f"; missing: {custom_install.bin_dir}")

    moved.rename(custom_install.bin_dir)
    host_probe(host=lab1)
    custom_install.refresh_from_db()

    assert custom_install.missing_since is None
