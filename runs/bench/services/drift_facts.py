"""The facts a run records for drift (runs.compare.drift) beyond its host's: what its device says it is
(model, serial, firmware, size, from lsblk and sysfs) and how its PostgreSQL was built
(pg_config). Probed while the run's connection is open, stored in Run.environment with the rest.

A probe that fails costs the run nothing: the facts are left unrecorded (drift then says "not
recorded", never "changed").
"""

import logging
from typing import Any

from runs.lab.host.probe import probe_device, probe_pg_build
from runs.lab.transport.interface import Transport
from runs.models import Run

log = logging.getLogger(__name__)


def drift_facts(transport: Transport, run: Run) -> dict[str, Any]:
    """{"device": {...DeviceFacts}, "postgresql": {"pg_config_version", "configure"}}, each
    left out when its probe failed. A directory-backed device has no block device facts."""
    found: dict[str, Any] = {}
    try:
        if run.device.is_block_device:
            found["device"] = probe_device(transport, run.device.path).as_json()
    except Exception:  # a fact not recorded is no reason to fail a run
        log.warning("run %s: could not probe device %s for its facts", run.pk, run.device, exc_info=True)
    try:
        build = probe_pg_build(transport, run.pg_install.bin_dir)
        found["postgresql"] = {"pg_config_version": build.version, "configure": build.configure}
    except Exception:  # as above
        log.warning("run %s: could not read how %s was built", run.pk, run.pg_install.bin_dir, exc_info=True)
    return found


def with_drift_facts(environment: dict[str, Any], drift: dict[str, Any] | None) -> dict[str, Any]:
    """The run's environment with the drift facts in place: the device's as
    environment["device"]["probed"], the build's beside the server's own PostgreSQL facts."""
    if not drift:
        return environment
    if "device" in drift and isinstance(environment.get("device"), dict):
        environment["device"]["probed"] = drift["device"]
    if "postgresql" in drift and isinstance(environment.get("postgresql"), dict):
        environment["postgresql"].update(drift["postgresql"])
    return environment
