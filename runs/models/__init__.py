from runs.models.access import Access
from runs.models.audit import AuditAction, AuditEvent
from runs.models.builds import (
    ENDED_BUILD_STATES,
    LIVE_BUILD_STATES,
    BuildSourceKind,
    BuildState,
    BuildStepName,
    PgBuild,
)
from runs.models.campaigns import MAX_CONFIGURATIONS, MAX_REPETITIONS, Campaign, CampaignConfiguration, RunOrder
from runs.models.inventory import BLOCK_SIZES, WAL_BLOCK_SIZES, Device, Host, PgInstall
from runs.models.run_clients import MAX_CLIENT_HOSTS, RunClient, RunClientSample
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
from runs.models.studies import StudyAfterBuilds, StudyWaitState

__all__ = [
    "ACTIVE_STATES",
    "BLOCK_SIZES",
    "ENDED_BUILD_STATES",
    "FINAL_STATES",
    "LIVE_BUILD_STATES",
    "MAX_CLIENT_HOSTS",
    "MAX_CONFIGURATIONS",
    "MAX_REPETITIONS",
    "MAX_SECONDS",
    "WAL_BLOCK_SIZES",
    "Access",
    "AuditAction",
    "AuditEvent",
    "BuildSourceKind",
    "BuildState",
    "BuildStepName",
    "Campaign",
    "CampaignConfiguration",
    "Device",
    "Filesystem",
    "Host",
    "OsSource",
    "PgBuild",
    "PgInstall",
    "QueryMode",
    "Run",
    "RunArtifact",
    "RunClient",
    "RunClientSample",
    "RunOrder",
    "RunOsSeries",
    "RunSample",
    "RunState",
    "RunTransition",
    "ShareKind",
    "ShareLink",
    "StudyAfterBuilds",
    "StudyWaitState",
    "Workload",
]
