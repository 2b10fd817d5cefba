from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "benchlab"

    def ready(self) -> None:
        # What follows a job's end is registered by the side that cares (runs.jobs.hooks).
        from runs.campaigns.services import hooks as campaign_hooks

        campaign_hooks.register()
        from runs.watch.services import hooks as watch_hooks

        watch_hooks.register()

        # The workload library's shipped scripts, in every database a migrate (or a test's flush) leaves.
        from django.db.models.signals import post_migrate

        from runs.bench.services.workload_library import shipped_scripts_sync

        post_migrate.connect(shipped_scripts_sync, sender=self, dispatch_uid="runs.shipped_scripts_sync")
