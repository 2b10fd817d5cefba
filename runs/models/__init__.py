from runs.models.access import Access
from runs.models.inventory import BLOCK_SIZES, WAL_BLOCK_SIZES, Device, Host, PgInstall
from runs.models.runs import (
    ACTIVE_STATES,
    FINAL_STATES,
    Filesystem,
    QueryMode,
    Run,
    RunArtifact,
    RunSample,
    RunState,
    RunTransition,
    Workload,
)

__all__ = [
    "ACTIVE_STATES",
    "BLOCK_SIZES",
    "FINAL_STATES",
    "WAL_BLOCK_SIZES",
    "Access",
    "Device",
    "Filesystem",
    "Host",
    "PgInstall",
    "QueryMode",
    "Run",
    "RunArtifact",
    "RunSample",
    "RunState",
    "RunTransition",
    "Workload",
]
