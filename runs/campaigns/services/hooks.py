"""What campaigns do when a job ends: registered with the job mechanism (runs.jobs.hooks) when
benchlab starts (runs.apps), so runs and builds know nothing of campaigns.

The campaign modules are imported when a hook first runs, not when Django starts: every Django
process registers the hooks, and one that only validates a form must not load the services and
the lab modules that act on hosts (runs/tests/project/test_options_pure.py)."""

from runs.jobs.hooks import on_job_end
from runs.jobs.kinds import BUILD, RUN
from runs.models import PgBuild, Run


def advance_campaign_of(run: Run) -> None:
    """An adaptive campaign may want another round once its run has ended."""
    from runs.campaigns.services.adaptive import campaign_advance

    if run.campaign_id is not None:
        campaign_advance(campaign_id=run.campaign_id)


def canaries_after_campaign_of(run: Run) -> None:
    """The fio canaries after the campaign once nothing more of it will run (registered after
    advance_campaign_of: an adaptive campaign's next round is queued first, and then waited for)."""
    from runs.campaigns.services.canary import campaign_canaries_after

    if run.campaign_id is not None:
        campaign_canaries_after(campaign_id=run.campaign_id)


def go_on_with_studies(build: PgBuild) -> None:
    """A study waiting for this build may be queued now, or given up (campaigns.services.after_builds)."""
    from runs.campaigns.services.after_builds import studies_after_build_ended

    studies_after_build_ended(build)


def register() -> None:
    on_job_end(RUN, advance_campaign_of)
    on_job_end(RUN, canaries_after_campaign_of)
    on_job_end(BUILD, go_on_with_studies)
