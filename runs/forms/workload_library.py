"""The queue form's side of the workload library: the script's parameters as inputs of their own
(one per declared parameter, with its range), read back into the run's workload_params.

The page renders every script's parameters, each set shown only while its script is chosen
(static/js/run_form.js); the server reads the chosen script's inputs alone, so the page works
without the script too. The API sends workload_params as an object instead.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from runs.lab.pgbench.library import Parameter, number_from_text, number_text
from runs.models import WorkloadScript


class ParamsField(forms.JSONField):
    """workload_params as JSON text (the page's hidden field, the API's object): an object of
    values by name, or a message saying so; never an error page for JSON Python cannot read."""

    default_error_messages = {"invalid": 'Give the parameters as an object of values, {"skew": 1.5}.'}

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except ValueError as exc:  # json's own limits (a 5,000-digit number) are not a ValidationError
            raise ValidationError(self.error_messages["invalid"], code="invalid") from exc

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except ValueError:  # the refused text is shown back as it was sent
            return forms.fields.InvalidJSONInput(data)


def input_name(script: WorkloadScript, parameter: Parameter, prefix: str = "") -> str:
    """The input's name: the form's prefix ("base-" on the campaign page), the script, the parameter."""
    return f"{prefix}param-{script.pk}-{parameter.name}"


@dataclass(frozen=True)
class ParameterInput:
    parameter: Parameter
    name: str  # the input's name (and id)
    value: str  # as the input shows it

    @property
    def step(self) -> str:
        return "1" if self.parameter.integer else "any"

    @property
    def minimum(self) -> str:
        return number_text(self.parameter.minimum)

    @property
    def maximum(self) -> str:
        return number_text(self.parameter.maximum)

    @property
    def default(self) -> str:
        return number_text(self.parameter.default)


@dataclass(frozen=True)
class LibraryChoice:
    """A script as the form shows it: its description and its parameters' inputs."""

    script: WorkloadScript
    inputs: tuple[ParameterInput, ...]


def library_choices(
    data: Mapping[str, Any], chosen: object, params: Mapping[str, object], prefix: str = ""
) -> list[LibraryChoice]:
    """Every script's inputs: what was sent, else the chosen script's values (Run again), else
    the defaults."""
    choices = []
    for script in WorkloadScript.objects.all():
        inputs = []
        for parameter in script.declared:
            name = input_name(script, parameter, prefix)
            if name in data:
                value = str(data[name])
            elif str(chosen) == str(script.pk) and parameter.name in params:
                value = str(params[parameter.name])
            else:
                value = number_text(parameter.default)
            inputs.append(ParameterInput(parameter=parameter, name=name, value=value))
        choices.append(LibraryChoice(script=script, inputs=tuple(inputs)))
    return choices


def params_from_page(data: Mapping[str, Any], script: WorkloadScript, prefix: str = "") -> dict[str, object] | None:
    """The chosen script's parameter values as the page sent them (a number where the text is one,
    else the text, which spec_errors refuses naming the range); None if the page sent none."""
    names = {p.name: input_name(script, p, prefix) for p in script.declared}
    sent = {name: data[key] for name, key in names.items() if key in data}
    if not sent:
        return None
    typed = {name: (str(text), number_from_text(str(text))) for name, text in sent.items() if str(text).strip()}
    return {name: text if number is None else number for name, (text, number) in typed.items()}
