"""A campaign's fio canaries (Campaign.fio_canary): a short fio job on each of its devices queued
with the campaign (so first in line, before its runs), and the same again once its last run has
ended; runs.method.canary compares the two.

Not the campaign's fio baseline run twice: a baseline is six jobs of 32 s per device, made to
compare devices; a canary only has to notice that a device changed, and must cost little. It is
a DeviceBaseline all the same (role canary-before / canary-after), so it waits, runs, is
cancelled and recovered by the job mechanism like any baseline.
"""

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from runs.baselines.services.baselines import baseline_queue, baseline_settings_of
from runs.lab.fio.plan import FioSettings, MiB
from runs.models import FINAL_STATES, BaselineRole, Campaign, Device, Run, RunState

# Three jobs of 1 s ramp + 2 s each: about 10 s a device, each time. The sequential write comes
# first (fio's standard order) and fills the region, so that the random reads read written
# blocks both times: a loop device's fresh image reads its holes without any I/O, and the
# campaign's mkfs fills them in between, which alone looked like a change of several times.
CANARY_SETTINGS = FioSettings(
    size_bytes=64 * MiB, runtime_s=2, ramp_s=1, jobs=("seq-write", "rand-read-qd1", "rand-write-qd1")
)


class CanaryRefused(Exception):
    """A device's canary cannot be queued; str() says which and why."""


def canary_settings(device: Device) -> FioSettings:
    """The canary's settings, on no more of the device than it has."""
    if device.capacity_bytes and device.capacity_bytes < CANARY_SETTINGS.size_bytes:
        size = max(16 * MiB, device.capacity_bytes // MiB * MiB)
        return FioSettings(size, CANARY_SETTINGS.runtime_s, CANARY_SETTINGS.ramp_s, CANARY_SETTINGS.jobs)
    return CANARY_SETTINGS


def canaries_queue_before(
    campaign: Campaign, device_ids: list[int], user: User | None, request: HttpRequest | None
) -> None:
    """One canary per distinct device, in the caller's transaction (CanaryRefused: nothing is queued)."""
    devices = Device.objects.select_related("host").in_bulk(set(device_ids))
    for device_id in dict.fromkeys(device_ids):
        device = devices[device_id]
        _queue(campaign, device, canary_settings(device), BaselineRole.CANARY_BEFORE, user, request)


def campaign_canaries_after(*, campaign_id: int) -> int:
    """After a campaign's run has ended: the canaries after the campaign, if it asked for them and
    nothing more will run (every run ended, none cancelled, no adaptive round queued: an adaptive
    campaign's next round is queued by the hook before this one); how many were queued. The same
    devices with the same settings as the canaries before; a device that can no longer be measured
    is skipped (its check then says no canary after)."""
    with transaction.atomic():
        # Locked: two runs ending at once must not both queue them.
        campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
        if not campaign.fio_canary or campaign.baselines.filter(role=BaselineRole.CANARY_AFTER).exists():
            return 0
        states = set(Run.objects.filter(campaign=campaign).values_list("state", flat=True))
        if not states <= set(FINAL_STATES) or RunState.CANCELLED in states:
            return 0  # runs still to come, or someone stopped the campaign
        before = campaign.baselines.filter(role=BaselineRole.CANARY_BEFORE).select_related("device__host")
        queued = 0
        for canary in before.order_by("pk"):
            try:
                _queue(campaign, canary.device, baseline_settings_of(canary), BaselineRole.CANARY_AFTER,
                       campaign.created_by, None)  # fmt: skip
            except CanaryRefused:
                continue
            queued += 1
    return queued


def _queue(
    campaign: Campaign,
    device: Device,
    settings: FioSettings,
    role: BaselineRole,
    user: User | None,
    request: HttpRequest | None,
) -> None:
    try:
        baseline_queue(device=device, settings=settings, by=user, request=request, campaign=campaign, role=role)
    except ValidationError as exc:
        reasons = "; ".join(message for messages in exc.message_dict.values() for message in messages)
        raise CanaryRefused(f"No fio canary of {device} can be queued: {reasons}") from None
