"""What the watch does when a run ends (registered with runs.jobs.hooks by runs.apps): it sends a
task (runs.tasks.watch_round_ended_task), so the worker that ran the run goes on at once. The task,
once the round has ended (its campaign's every run, or a run outside campaigns), detects and stores
the change points of its series and compares a scheduled round with the previous one; notices are
delivered by tasks of their own (runs.notify.services.deliver)."""

from django.db import transaction

from benchlab.celery import app
from runs.jobs.hooks import on_job_end
from runs.jobs.kinds import RUN
from runs.models import FINAL_STATES, Campaign, Run, RunState

ROUND_TASK = "runs.watch_round_ended"  # runs.tasks.watch_round_ended_task, sent by name


def watch_after_run(run: Run) -> None:
    """The run's end hook: any run of a campaign, or a done run outside campaigns, may end a round."""
    if run.campaign_id is not None or run.state == RunState.DONE:
        run_id = run.pk
        transaction.on_commit(lambda: app.send_task(ROUND_TASK, args=[run_id]))


def watch_round_ended(run_id: int) -> int:
    """Detect the change points of the round `run_id` ended, if it ended one; how many series were read."""
    from runs.watch.selectors import campaign_series, recurring_series
    from runs.watch.services.detect import watch_detect
    from runs.watch.services.rounds import round_moved_notify

    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return 0
    if run.campaign_id is None:
        keys = sorted({key for key, _ in recurring_series([run]).values()})
        for key in keys:
            watch_detect(key)
        return len(keys)
    with transaction.atomic():
        # Locked: the round's last two runs ending at once detect once, and tell once.
        campaign = Campaign.objects.select_for_update().get(pk=run.campaign_id)
        states = set(Run.objects.filter(campaign=campaign).values_list("state", flat=True))
        if not states <= set(FINAL_STATES):
            return 0  # the round goes on
        keys = sorted({key for key, _ in campaign_series(campaign.pk).values()})
        for key in keys:
            watch_detect(key)
        round_moved_notify(campaign)
    return len(keys)


def register() -> None:
    on_job_end(RUN, watch_after_run)
