"""What the watch does when a run ends (registered with runs.jobs.hooks by runs.apps): once a
round has ended (its campaign's every run, or a run outside campaigns), the change points of its
series are detected and stored, and a scheduled round is compared with the previous one. A few
queries per series, no host and no network: notices are delivered by their own task
(runs.notify.services.deliver)."""

from django.db import transaction

from runs.jobs.hooks import on_job_end
from runs.jobs.kinds import RUN
from runs.models import FINAL_STATES, Campaign, Run, RunState


def watch_after_run(run: Run) -> None:
    from runs.watch.selectors import campaign_series, recurring_series
    from runs.watch.services.detect import watch_detect
    from runs.watch.services.rounds import round_moved_notify

    if run.campaign_id is None:
        if run.state == RunState.DONE:
            for key, _ in recurring_series([run]).values():
                watch_detect(key)
        return
    with transaction.atomic():
        # Locked: the round's last two runs ending at once detect once, and tell once.
        campaign = Campaign.objects.select_for_update().get(pk=run.campaign_id)
        states = set(Run.objects.filter(campaign=campaign).values_list("state", flat=True))
        if not states <= set(FINAL_STATES):
            return  # the round goes on
        for key in sorted({key for key, _ in campaign_series(campaign.pk).values()}):
            watch_detect(key)
        round_moved_notify(campaign)


def register() -> None:
    on_job_end(RUN, watch_after_run)
