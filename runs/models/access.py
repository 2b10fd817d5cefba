from django.db import models


class Access(models.Model):
    """Holds permissions that belong to no table: what a user may do with runs.

    Unmanaged and without default permissions, so it creates no table; groups get
    `runs.queue_run`, `runs.cancel_run` and `runs.cancel_any_run` from the data migrations.
    """

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("queue_run", "Can queue benchmark runs"),
            ("cancel_run", "Can cancel benchmark runs they queued"),
            ("cancel_any_run", "Can cancel anybody's benchmark runs"),
        ]

    def __str__(self) -> str:
        return "benchlab access rights"
