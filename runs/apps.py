from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "benchlab"

    def ready(self) -> None:
        # What follows a job's end is registered by the side that cares (runs.jobs.hooks).
        from runs.campaigns.services import hooks as campaign_hooks

        campaign_hooks.register()
