"""Small builders for jobs (campaigns, PostgreSQL builds, fio baselines) and what the regression
watch stores of them (a change point), as the database holds them, with no worker involved; the
inventory's builders are in factories.py."""

from typing import Any

from django.contrib.auth.models import User

from runs.models import Campaign, CampaignConfiguration, Device, DeviceBaseline, Host, PgBuild, StoredChangePoint


def make_campaign(created_by: User, **fields: Any) -> tuple[Campaign, CampaignConfiguration]:
    """A campaign with one configuration ("base"), as a run of it names them."""
    campaign = Campaign.objects.create(created_by=created_by, **({"name": "study", "base_spec": {}} | fields))
    configuration = CampaignConfiguration.objects.create(campaign=campaign, index=0, label="base", spec={})
    return campaign, configuration


def make_build(host: Host, queued_by: User, **fields: Any) -> PgBuild:
    """A queued build of Debian's PostgreSQL 15.20 source with the default page sizes."""
    defaults: dict[str, Any] = {
        "version": "15.20",
        "source_kind": "debian",
        "package": "postgresql-15",
        "package_version": "15.20-0+deb12u1",
        "key": "0123456789ab",
        "prefix": "/var/lib/benchlab/builds/pg-15.20-b8k-w8k-s1g-0123456789ab",
    }
    return PgBuild.objects.create(host=host, queued_by=queued_by, **(defaults | fields))


def make_baseline(device: Device, queued_by: User, **fields: Any) -> DeviceBaseline:
    """A queued fio baseline of one short job on the device."""
    defaults: dict[str, Any] = {"size_bytes": 2**26, "runtime_s": 2, "ramp_s": 0, "jobs": ["rand-read-qd1"]}
    return DeviceBaseline.objects.create(device=device, host=device.host, queued_by=queued_by, **(defaults | fields))


def make_change_point(**fields: Any) -> StoredChangePoint:
    """An open change point of steady-state tps: +10 % between round 5 and 6 of a made-up series."""
    defaults: dict[str, Any] = {
        "series_key": "0123456789abcdef",
        "metric": "steady_tps",
        "round_ref": "c1",
        "title": "lab1",
        "before_mean": 1000,
        "after_mean": 1100,
        "change": 0.1,
        "p": 0.001,
        "rounds_before": 5,
        "rounds_after": 5,
        "round_before": 5,
        "round_after": 6,
        "comparison_url": "/compare/?runs=1,2",
    }
    return StoredChangePoint.objects.create(**(defaults | fields))
