"""Keeping a campaign's storage and loaded database for its next run on the same device.

Making the filesystem and loading the database (`pgbench -i`) can take longer than the
measurement. When the next run in line on a host belongs to the same campaign and shares the
setup (device, filesystem, mkfs and mount options, PostgreSQL install, scale and pgbench -i's
options), a run leaves
its mount and its stopped cluster in place (the lab layer's KeptSetup), recorded on the
device, and that next run starts the cluster instead of making everything again. A campaign
that asks for a fresh database per run never keeps anything, nor does a run whose data state is
"fresh" or "frozen" (Run.data_state: only "reused" takes over a kept setup).

Whatever run comes next on the host discards every kept setup it does not use, so nothing
stays mounted once the campaign moves on.
"""

import logging
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from runs.bench.specs import INIT_FIELDS
from runs.lab.benchmark.run import KeptSetup, discard_kept_setup
from runs.lab.errors import LabError
from runs.lab.transport.interface import Transport
from runs.models import DataState, Device, Run, RunState

log = logging.getLogger(__name__)
# The load signature: a kept database is reused only by a run of the same driver that loads the same
# (pgbench: scale and -i's options; sysbench: its tables and their size).
SETUP_FIELDS = (
    "device_id", "filesystem", "mkfs_options", "mount_options", "pg_install_id", "scale", *INIT_FIELDS,
    "driver", "sysbench_tables", "sysbench_table_size",
)  # fmt: skip


def setup_signature(run: Run) -> list[Any]:
    """What a run's storage and database depend on: equal signatures can share them."""
    return [getattr(run, name) for name in SETUP_FIELDS]


@dataclass(frozen=True)
class ReusePlan:
    reuse: KeptSetup | None  # what this run starts from, if anything
    reused_from: int | None  # the run that made it
    keep: bool  # leave storage and database for the next run
    discard: list[tuple[Device, KeptSetup]]  # kept setups on this host that this run does not use


def reuse_plan(run: Run) -> ReusePlan:
    """Decide, as a run starts (it holds its hosts), what it reuses, keeps and discards."""
    reuse, reused_from, discard = None, None, []
    for device in Device.objects.filter(host=run.server_host, kept_setup__isnull=False):
        kept = device.kept_setup or {}
        setup = _setup(kept)
        if setup is None:
            Device.objects.filter(pk=device.pk).update(kept_setup=None)  # unreadable: forget it
            continue
        usable = _campaign_reuses(run) and kept.get("campaign") == run.campaign_id
        if usable and device.pk == run.device_id and kept.get("signature") == setup_signature(run):
            reuse, reused_from = setup, kept.get("run")
        else:
            discard.append((device, setup))
    return ReusePlan(reuse=reuse, reused_from=reused_from, keep=_next_in_line_shares(run), discard=discard)


def _setup(kept: dict[str, Any]) -> KeptSetup | None:
    try:
        return KeptSetup.from_json(kept.get("setup") or {})
    except ValueError:
        log.warning("a kept setup could not be read: %r", kept)
        return None


def _campaign_reuses(run: Run) -> bool:
    """A kept setup holds one database: a run with one per client host neither keeps nor reuses;
    nor does a run that asks for freshly loaded (or frozen) data."""
    one_database = run.shared_database or len(run.client_host_list) <= 1
    wants_reuse = run.data_state == DataState.REUSED
    return run.campaign is not None and not run.campaign.fresh_database and one_database and wants_reuse


def _next_in_line_shares(run: Run) -> bool:
    """Whether the next run in line on this run's server host is of the same campaign, on the
    same device, with the same setup: only then is anything worth keeping."""
    if not _campaign_reuses(run):
        return False
    host = run.server_host_id
    uses_host = Q(server_host_id=host) | Q(run_clients__host_id=host)
    following = Run.objects.filter(uses_host, state=RunState.QUEUED, pk__gt=run.pk).distinct().order_by("pk").first()
    return (
        following is not None
        and following.campaign_id == run.campaign_id
        and following.server_host_id == host
        and setup_signature(following) == setup_signature(run)
        and _campaign_reuses(following)
    )


def discard_setups(transport: Transport, discard: list[tuple[Device, KeptSetup]]) -> None:
    """Unmount and remove kept setups this run does not use (on its server, which it holds)."""
    for device, setup in discard:
        try:
            discard_kept_setup(transport, setup)
        except LabError:
            log.warning("could not discard the kept setup on %s", device, exc_info=True)
            continue  # recorded still: the next run tries again
        Device.objects.filter(pk=device.pk).update(kept_setup=None)


def record_kept(run: Run, kept: KeptSetup | None) -> None:
    """What the run left on its device (or that it left nothing: the reused setup is gone)."""
    value = None
    if kept is not None:
        value = {"signature": setup_signature(run), "campaign": run.campaign_id, "run": run.pk, "setup": kept.as_json()}
    Device.objects.filter(pk=run.device_id).update(kept_setup=value)
