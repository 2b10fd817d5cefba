"""What a campaign's page and its API both show, read once: its runs, progress, matrix, the
adaptive repetitions' state, the statistics against a baseline and their confounds."""

from dataclasses import dataclass

from runs.campaigns.selectors.confounds import CampaignConfounds, campaign_confounds
from runs.campaigns.selectors.results import (
    AdaptiveState,
    MatrixRow,
    MetricTable,
    Progress,
    adaptive_status,
    campaign_matrix,
    campaign_progress,
    campaign_runs,
    campaign_statistics,
)
from runs.models import Campaign, CampaignConfiguration, Run


@dataclass(frozen=True)
class CampaignOverview:
    runs: list[Run]
    progress: Progress
    matrix: list[MatrixRow]  # a row per configuration
    adaptive: dict[CampaignConfiguration, AdaptiveState]  # empty without a target confidence interval
    tables: list[MetricTable]  # a table per metric; none without configurations
    confounds: CampaignConfounds


def campaign_overview(campaign: Campaign, baseline: int) -> CampaignOverview:
    runs = campaign_runs(campaign)
    matrix = campaign_matrix(campaign, runs)
    return CampaignOverview(
        runs=runs,
        progress=campaign_progress(campaign, runs),
        matrix=matrix,
        adaptive=adaptive_status(campaign, runs) if campaign.target_ci_pct is not None else {},
        tables=campaign_statistics(campaign, runs, baseline) if matrix else [],
        confounds=campaign_confounds(campaign, runs, baseline),
    )
