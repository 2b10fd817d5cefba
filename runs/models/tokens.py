"""API tokens' names: knox's AuthToken has none, and a user with several tokens (a laptop, a CI
job, a lab's setup script) needs to tell them apart to revoke the right one.

A row of its own, one-to-one with knox's AuthToken and keyed by it (its digest), rather than a
swapped token model (KNOX_TOKEN_MODEL): knox, its admin and its authentication stay as shipped,
the tokens made before this table existed keep working (they are listed without a name), and a
token knox deletes (revoked, or found expired when it is used) takes its name with it (CASCADE).
The secret itself is never stored, only knox's hash and its first characters (`token_key`).
"""

from django.db import models

TOKEN_NAME_MAX = 100


class ApiTokenName(models.Model):
    token = models.OneToOneField(
        # By name: importing knox's models here would make every importer of runs.models load knox.
        "knox.AuthToken",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="benchlab_name",
        editable=False,
    )
    name = models.CharField(max_length=TOKEN_NAME_MAX, help_text="What the token is for, as its owner named it.")

    class Meta:
        verbose_name = "API token name"

    def __str__(self) -> str:
        return self.name
