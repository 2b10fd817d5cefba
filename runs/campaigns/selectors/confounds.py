"""A campaign's confounds, for its page and its API alike: the warnings of its comparison (runs
grouped by configuration) and the marker on each configuration's verdict against the baseline."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from runs.compare.confounds import group_confounds, marker_text, marker_title
from runs.compare.query import ComparisonQuery
from runs.compare.selectors.comparison import ComparisonResult, compare_runs
from runs.models import Campaign, Run


@dataclass(frozen=True)
class CampaignConfounds:
    comparison: ComparisonResult | None  # None before any run
    warnings: list[str] = field(default_factory=list)
    markers: dict[int, tuple[str, str]] = field(default_factory=dict)  # configuration -> (marker, its title)

    def marker(self, configuration: int) -> tuple[str, str]:
        return self.markers.get(configuration, ("", ""))


def campaign_confounds(campaign: Campaign, runs: Sequence[Run], baseline: int) -> CampaignConfounds:
    """What the campaign's verdicts mix in besides the configuration (runs.compare.confounds); the
    comparison groups the runs by their whole specification: a configuration's."""
    if not runs:
        return CampaignConfounds(None)
    comparison = compare_runs(ComparisonQuery(campaign_id=campaign.pk))
    group_of: dict[int, int] = {}
    for group in comparison.groups:
        group_of |= {run.configuration.index: group.index for run in group.runs if run.configuration}
    markers = {}
    if (there := group_of.get(baseline)) is not None:
        for configuration, here in group_of.items():
            found = group_confounds(comparison.differences, here, there)
            markers[configuration] = (marker_text(found), marker_title(found))
    return CampaignConfounds(comparison, comparison.warnings, markers)
