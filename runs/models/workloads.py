"""The workload library: named, versioned pgbench scripts a run may choose instead of a builtin
one, with declared parameters (runs/lab/pgbench/library/ has the rules and the shipped scripts).

A version is what a run ran: once shipped or used by a run it is never edited, a changed script
is the next version (the admin says so). Runs keep the text they ran (Run.script_as_run).
"""

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from runs.lab.errors import InvalidOption
from runs.lab.pgbench.library import (
    Parameter,
    check_library_script,
    parameter_values,
    parse_parameters,
    rendered_script,
)

SCRIPT_NAME = RegexValidator(r"^[a-z0-9]+(-[a-z0-9]+)*$", "Use lower-case letters and digits, joined by hyphens.")


class WorkloadScript(models.Model):
    name = models.CharField(max_length=40, validators=[SCRIPT_NAME], help_text="e.g. skewed-zipfian")
    version = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    title = models.CharField(max_length=100)
    description = models.TextField(help_text="What it models and when to use it.")
    script = models.TextField(
        help_text="A pgbench script: SQL and the harmless meta-commands (\\set, \\if, …; never \\shell). "
        "Every :variable it uses is pgbench's own (scale, client_id, random_seed, default_seed), set by the "
        "script, or a declared parameter."
    )
    parameters = models.JSONField(
        default=list,
        blank=True,
        help_text='A list of {"name": "skew", "label": "skew", "minimum": 1.001, "maximum": 1000, '
        '"default": 1.1, "integer": false}. Each becomes a "\\set name value" line before the script.',
    )
    shipped = models.BooleanField(default=False, editable=False, help_text="Shipped with benchlab.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="workload_script_name_version")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def declared(self) -> tuple[Parameter, ...]:
        """The parameters as declared (stored rows were checked by clean())."""
        return parse_parameters(self.parameters)

    def clean(self) -> None:
        try:
            parameters = parse_parameters(self.parameters)
        except InvalidOption as exc:
            raise ValidationError({"parameters": str(exc)}) from exc
        try:
            check_library_script(self.script, parameters)
        except InvalidOption as exc:
            raise ValidationError({"script": str(exc)}) from exc

    def values(self, params: Mapping[str, object]) -> dict[str, float]:
        """Every parameter's value, the defaults filled in; InvalidOption naming an unknown one or
        the range of one out of it."""
        return parameter_values(self.declared, params)

    def rendered(self, params: Mapping[str, object]) -> str:
        """The text pgbench runs with these values (InvalidOption as values())."""
        return rendered_script(f"{self} ({self.title})", self.script, self.declared, params)

    def choice_data(self) -> dict[str, Any]:
        """What the queue form shows of it: its description and its parameters' ranges."""
        return {"title": self.title, "description": self.description, "parameters": self.parameters}
