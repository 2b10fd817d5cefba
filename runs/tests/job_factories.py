"""Small builders for jobs (campaigns, PostgreSQL builds, fio baselines) as the database holds them,
with no worker involved; the inventory's builders are in factories.py."""

from typing import Any

from django.contrib.auth.models import User

from runs.models import Campaign, CampaignConfiguration, Device, DeviceBaseline, Host, PgBuild


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
