"""The workload library's campaign variables: the library script (by id, name, or "name vN"),
and each of its parameters ("param:skew", values as numbers). A parameter's values are checked
against the script's declared range when each configuration is checked (spec_errors), so one out
of range is refused naming the range, and nothing is queued.

Sweeping the script keeps the parameters the base gave that the configuration's script declares
(matrix.expand drops the others, follow_script); a swept parameter is set whatever the script.
"""

import re
from collections.abc import Callable, Mapping
from typing import Any

from runs.bench.specs import RunSpec
from runs.lab.pgbench.library import NAME, number_from_text, number_text
from runs.models import Workload, WorkloadScript

PARAM_PREFIX = "param:"
SCRIPT_VARIABLE = "library_script"
SCRIPT_ALLOWED = 'give a library script\'s id, its name (its newest version) or "name v2"'
Change = Callable[[RunSpec], dict[str, Any]]


class LibraryVariableError(ValueError):
    pass


def is_param(field: str) -> bool:
    return field.startswith(PARAM_PREFIX) and bool(NAME.fullmatch(field.removeprefix(PARAM_PREFIX)))


def param_label(field: str) -> str:
    return f"parameter {field.removeprefix(PARAM_PREFIX)}"


def read_script(value: Any) -> Change:
    """A script by id, name or "name vN": the library workload with that script."""
    script_id = _script_id(value)
    return lambda base: {"workload": Workload.LIBRARY, "library_script_id": script_id}


def _script_id(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and len(text) < 12:
        return int(text)
    match = re.fullmatch(r"([a-z0-9-]{1,40})(?: v([0-9]{1,6}))?", text)
    if not match:
        raise LibraryVariableError(f"library script: {value!r:.40} is not one; {SCRIPT_ALLOWED}")
    versions = WorkloadScript.objects.filter(name=match[1])
    if match[2]:
        versions = versions.filter(version=int(match[2]))
    found = versions.order_by("-version").values_list("pk", flat=True).first()
    if found is None:
        raise LibraryVariableError(f"library script: there is no {text}; {SCRIPT_ALLOWED}")
    return found


def read_param(field: str) -> Callable[[Any], Change]:
    """A parameter's value, a number (spec_errors checks it against the script's range)."""
    name = field.removeprefix(PARAM_PREFIX)

    def read(value: Any) -> Change:
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if isinstance(value, str):
            number = number_from_text(value)
        if number is None:
            raise LibraryVariableError(f"{param_label(field)}: {value!r:.40} is not a number")
        return lambda base: {"workload_params": {name: number}}  # merged with the others' (matrix.expand)

    return read


def follow_script(base: RunSpec, spec: RunSpec, swept: set[str], scripts: Mapping[int, WorkloadScript]) -> RunSpec:
    """With the script swept: the base's parameters the configuration's script does not declare
    are dropped (a swept parameter stays: spec_errors then names the script that lacks it)."""
    script = scripts.get(spec.library_script_id) if spec.library_script_id is not None else None
    if SCRIPT_VARIABLE not in swept or script is None:
        return spec
    declared = {p.name for p in script.declared}
    kept = {name: value for name, value in spec.workload_params if name in declared or PARAM_PREFIX + name in swept}
    return spec.replace(workload_params=kept)


def shown(field: str, change: Mapping[str, Any], scripts: Mapping[int, WorkloadScript]) -> str:
    if field == SCRIPT_VARIABLE:
        script = scripts.get(change["library_script_id"])
        return str(script) if script else f"library script {change['library_script_id']}"
    name = field.removeprefix(PARAM_PREFIX)
    value = change["workload_params"][name]
    return f"{name} {number_text(value)}"
