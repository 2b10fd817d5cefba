from runs.models.access import Access
from runs.models.audit import AuditAction, AuditEvent
from runs.models.campaigns import MAX_CONFIGURATIONS, MAX_REPETITIONS, Campaign, CampaignConfiguration, RunOrder
from runs.models.inventory import BLOCK_SIZES, WAL_BLOCK_SIZES, Device, Host, PgInstall
from runs.models.runs import (
    ACTIVE_STATES,
    FINAL_STATES,
    MAX_SECONDS,
    Filesystem,
    OsSource,
    QueryMode,
    Run,
    RunArtifact,
    RunOsSeries,
    RunSample,
    RunState,
    RunTransition,
    Workload,
)
from runs.models.shares import ShareKind, ShareLink

__all__ = [
    "ACTIVE_STATES",
    "BLOCK_SIZES",
    "FINAL_STATES",
    "MAX_CONFIGURATIONS",
    "MAX_REPETITIONS",
    "MAX_SECONDS",
    "WAL_BLOCK_SIZES",
    "Access",
    "AuditAction",
    "AuditEvent",
    "Campaign",
    "CampaignConfiguration",
    "Device",
    "Filesystem",
    "Host",
    "OsSource",
    "PgInstall",
    "QueryMode",
    "Run",
    "RunArtifact",
    "RunOrder",
    "RunOsSeries",
    "RunSample",
    "RunState",
    "RunTransition",
    "ShareKind",
    "ShareLink",
    "Workload",
]
