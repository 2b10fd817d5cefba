"""Adaptive repetition: a campaign that names a target keeps repeating each configuration until
the 95 % confidence interval of its mean steady-state tps is within ±target % of the mean, or
its maximum count is reached. Whole rounds are added at a time, and only once every run of the
campaign has finished, so the configurations still repeating stay interleaved.
"""

import random

from django.db import transaction

from runs.bench.services.runs import runs_enqueue
from runs.bench.specs import RunSpec
from runs.campaigns.selectors.results import adaptive_status
from runs.models import FINAL_STATES, Campaign, Run, RunState


def campaign_advance(*, campaign_id: int) -> int:
    """After a campaign's run has ended: queue another round of the configurations that still
    repeat, if the campaign is adaptive and its last round is over; how many runs were queued."""
    with transaction.atomic():
        # Locked: two runs ending at once must not both add the round.
        campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
        if campaign.target_ci_pct is None:
            return 0
        runs = list(Run.objects.filter(campaign=campaign).select_related("configuration"))
        if any(run.state not in FINAL_STATES for run in runs):
            return 0  # the round is not over
        if any(run.state == RunState.CANCELLED for run in runs):
            return 0  # someone stopped the campaign, or part of it: do not start it again
        status = adaptive_status(campaign, runs)
        repeating = [configuration for configuration, state in status.items() if state.repeating]
        if not repeating:
            return 0
        repetition = max(run.repetition or 0 for run in runs) + 1
        if campaign.seed is not None:
            random.Random(f"{campaign.seed}:{repetition}").shuffle(repeating)  # noqa: S311 - an order
        specs = [RunSpec.from_json(configuration.spec) for configuration in repeating]
        accepted = _accepted_when_first_queued(runs)
        again = [
            Run(
                **spec.run_fields(),
                campaign=campaign,
                configuration=configuration,
                repetition=repetition,
                queued_by=campaign.created_by,
                method_overrides=accepted.get(configuration.pk, {}),
            )
            for spec, configuration in zip(specs, repeating, strict=True)
        ]
        runs_enqueue(runs=again, client_host_ids=[spec.client_host_ids for spec in specs])
    return len(again)


def _accepted_when_first_queued(runs: list[Run]) -> dict[int, dict[str, dict[str, str]]]:
    """Each configuration's method warnings as its first round accepted them (the reason given when
    the campaign was queued): a later round runs the same spec, so it meets the same warnings."""
    accepted: dict[int, dict[str, dict[str, str]]] = {}
    for run in sorted(runs, key=lambda run: (run.repetition or 0, run.pk)):
        if run.configuration_id is not None:
            accepted.setdefault(run.configuration_id, run.method_overrides)
    return accepted
