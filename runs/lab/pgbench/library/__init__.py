"""The workload library's rules, pure: a script's declared parameters, the values a run gives
them, and the script as pgbench runs it.

A library script is a pgbench script (checked as any custom script: runs/lab/pgbench/script.py)
whose `:variables` are either pgbench's own (AUTOMATIC), set by the script itself (`\\set`,
`\\gset`, `\\aset`), or declared parameters: a name, a range and a default. A run chooses values
within the ranges; the script as run is the library text behind one `\\set name value` line per
parameter (rendered_script), so what pgbench ran can be read back whole from the run.
The shipped scripts are files beside this module (shipped.py lists them).
"""

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runs.lab.errors import InvalidOption
from runs.lab.pgbench.script import check_custom_script

# pgbench sets these itself (pgbench.c: scale, client_id, random_seed, default_seed).
AUTOMATIC = ("scale", "client_id", "random_seed", "default_seed")
NAME = re.compile(r"[a-z_][a-z0-9_]{0,39}")
# A variable reference: ":name", but not the second colon of a "::type" cast.
_REFERENCE = re.compile(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)")
_SET = re.compile(r"^[ \t]*\\set[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE | re.IGNORECASE)
_STORE = re.compile(r"\\[ag]set\b[ \t]*([A-Za-z0-9_]*)", re.IGNORECASE)
_ALIAS = re.compile(r"\bAS\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_PARAMETER_KEYS = {"name", "label", "minimum", "maximum", "default", "integer"}


@dataclass(frozen=True)
class Parameter:
    name: str
    label: str
    minimum: float
    maximum: float
    default: float
    integer: bool = False

    @classmethod
    def from_json(cls, data: object) -> "Parameter":
        if not isinstance(data, Mapping) or not {"name", "minimum", "maximum", "default"} <= set(data):
            raise InvalidOption(
                "each parameter is an object with name, label, minimum, maximum, default and integer (true/false)"
            )
        if unknown := sorted(set(data) - _PARAMETER_KEYS):
            raise InvalidOption(f"parameter {data.get('name')!r:.40}: unknown key {', '.join(unknown)}")
        numbers = [data[key] for key in ("minimum", "maximum", "default")]
        if not all(_is_number(v) for v in numbers):
            raise InvalidOption(f"parameter {data['name']!r:.40}: minimum, maximum and default must be numbers")
        return cls(
            name=str(data["name"]),
            label=str(data.get("label") or data["name"]),
            minimum=numbers[0],
            maximum=numbers[1],
            default=numbers[2],
            integer=bool(data.get("integer", False)),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "minimum": self.minimum,
            "maximum": self.maximum,
            "default": self.default,
            "integer": self.integer,
        }

    @property
    def allowed(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} between {number_text(self.minimum)} and {number_text(self.maximum)}"

    def problem(self, value: object) -> str | None:
        """What is wrong with a value for this parameter, naming the range; None if it fits."""
        if not _is_number(value):
            return f"{self.name} must be {self.allowed}, not {value!r:.40}"
        assert isinstance(value, int | float)
        if self.integer and not float(value).is_integer():
            return f"{self.name} must be {self.allowed}, not {number_text(value)}"
        if not self.minimum <= value <= self.maximum:
            low, high = number_text(self.minimum), number_text(self.maximum)
            return f"{self.name} must be between {low} and {high}, not {number_text(value)}"
        return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def number_text(value: float) -> str:
    """1 not 1.0, 1.001 as typed."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def number_from_text(text: str) -> int | float | None:
    """ "3" as 3, "1.5" as 1.5 (a form's or a campaign's typed value); None for anything else."""
    for kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            continue
    return None


def parse_parameters(data: object) -> tuple[Parameter, ...]:
    """Declarations as stored (a JSON list), each sane: a pgbench variable name of its own, not one
    of pgbench's automatic ones, minimum ≤ default ≤ maximum; InvalidOption naming the first wrong."""
    if not isinstance(data, list):
        raise InvalidOption("parameters are a JSON list of {name, label, minimum, maximum, default, integer}")
    parameters = tuple(Parameter.from_json(item) for item in data)
    seen: set[str] = set()
    for parameter in parameters:
        name = parameter.name
        if not NAME.fullmatch(name):
            raise InvalidOption(
                f"parameter name {name!r:.40}: use lower-case letters, digits and _ (a pgbench variable name)"
            )
        if name in AUTOMATIC:
            raise InvalidOption(f"parameter name {name}: pgbench sets it itself ({', '.join(AUTOMATIC)})")
        if name in seen:
            raise InvalidOption(f"parameter {name} is declared twice")
        seen.add(name)
        if not parameter.minimum <= parameter.default <= parameter.maximum:
            raise InvalidOption(
                f"parameter {name}: minimum ≤ default ≤ maximum, not {number_text(parameter.minimum)}, "
                f"{number_text(parameter.default)}, {number_text(parameter.maximum)}"
            )
        if parameter.integer and not all(
            float(v).is_integer() for v in (parameter.minimum, parameter.maximum, parameter.default)
        ):
            raise InvalidOption(f"parameter {name} is a whole number: its minimum, maximum and default must be too")
    return parameters


def used_variables(script: str) -> set[str]:
    """Every :variable the script refers to, in SQL and in meta-commands."""
    return set(_REFERENCE.findall(script))


def set_variables(script: str) -> set[str]:
    """The variables the script sets itself: \\set's, and with \\gset or \\aset the columns it names."""
    names = set(_SET.findall(script))
    if prefixes := set(_STORE.findall(script)):
        names |= {prefix + alias for prefix in prefixes for alias in _ALIAS.findall(script)}
    return names


def check_library_script(script: str, parameters: Sequence[Parameter]) -> None:
    """A library script: allowed meta-commands only, and every variable it uses is pgbench's own,
    set by itself, or a declared parameter; InvalidOption naming what is not."""
    if not script.strip():
        raise InvalidOption("the script is empty")
    check_custom_script(script)
    declared = {p.name for p in parameters}
    undeclared = sorted(used_variables(script) - declared - set_variables(script) - set(AUTOMATIC))
    if undeclared:
        raise InvalidOption(
            f"the script uses :{', :'.join(undeclared)} but neither sets nor declares "
            f"{'it' if len(undeclared) == 1 else 'them'}: declare a parameter or \\set it"
        )


def parameter_values(parameters: Sequence[Parameter], given: Mapping[str, object]) -> dict[str, float]:
    """Every parameter's value: the given one, else its default; InvalidOption naming an unknown
    parameter or a value out of its range (with the range)."""
    by_name = {p.name: p for p in parameters}
    unknown = sorted(set(given) - set(by_name))
    if unknown:
        takes = ", ".join(by_name) or "no parameters"
        raise InvalidOption(f"unknown parameter {', '.join(unknown)}: this script takes {takes}")
    problems = [problem for p in parameters if p.name in given and (problem := p.problem(given[p.name]))]
    if problems:
        raise InvalidOption("; ".join(problems))
    return {p.name: given.get(p.name, p.default) for p in parameters}  # type: ignore[misc]


def rendered_script(title: str, script: str, parameters: Sequence[Parameter], given: Mapping[str, object]) -> str:
    """The script as run: a header naming it, one \\set per parameter, then the library text."""
    values = parameter_values(parameters, given)
    header = [f"-- benchlab workload library: {title}"]
    for parameter in parameters:
        value = values[parameter.name]
        shown = str(int(value)) if parameter.integer else repr(float(value))
        header.append(f"\\set {parameter.name} {shown}")
    return "\n".join(header) + "\n" + script.lstrip("\n")
