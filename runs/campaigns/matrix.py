"""A campaign's matrix: the base specification crossed with the variables' values, each combination
validated by the one path every run takes (spec_checks.spec_errors), and the order its runs are
queued in. Nothing here writes to the database or touches a machine.

A variable is a spec field and a list of values, given as a person types them ("8/2" for 8
clients on 2 threads, "shared_buffers=1GB; work_mem=64MB" for settings, a device's id). Varying
the device moves the run to that device's host, and, unless the install is varied too, to the
install there with the same version and page size as the base's.
"""

import itertools
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.spec_labels import EMPTY_VALUES, spec_value
from runs.bench.specs import INIT_FIELDS, RunSpec
from runs.campaigns import library_variables as library
from runs.campaigns.variables import (
    NONE_SHOWN,
    VARIABLES,
    Change,
    MatrixError,
    read_value,
    variable_label,
    variable_reader,
)
from runs.models import MAX_CONFIGURATIONS, Driver, Run

SYSBENCH_FIELDS = ("sysbench_tables", "sysbench_table_size")
# The most combinations a campaign's variables may make: each is expanded and checked (about
# 0.3 ms each), and some are rejected (a filesystem a device cannot take), so more than the
# MAX_CONFIGURATIONS that may be queued, but never the million three variables of 100 values make.
MAX_COMBINATIONS = 5 * MAX_CONFIGURATIONS


@dataclass(frozen=True)
class Variable:
    field: str  # a key of VARIABLES: the queue form's field name
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Cell:
    """One combination of the variables' values: a configuration, or why it cannot be one."""

    values: tuple[tuple[str, str], ...]  # (variable label, value as shown), in the variables' order
    spec: RunSpec
    errors: Mapping[str, Sequence[str]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return " · ".join(shown for _, shown in self.values) or "base specification"

    @property
    def valid(self) -> bool:
        return not self.errors

    def reasons(self) -> list[str]:
        return [
            f"{name.replace('_', ' ')}: {message}" for name, messages in self.errors.items() for message in messages
        ]


def check_variables(variables: Sequence[Variable]) -> list[list[Change]]:
    """Each variable's values read (MatrixError for an unknown or repeated variable, one without
    values, more combinations than a campaign may expand, or a value it cannot take)."""
    seen: set[str] = set()
    for variable in variables:
        if variable_reader(variable.field) is None:
            choices = ", ".join([*VARIABLES, library.SCRIPT_VARIABLE, library.PARAM_PREFIX + "<parameter name>"])
            raise MatrixError(f"{variable.field!r:.40} cannot be swept: choose from {choices}")
        if variable.field in seen:
            raise MatrixError(f"{variable_label(variable.field)} is given twice: list all its values once")
        if not variable.values:
            raise MatrixError(f"{variable_label(variable.field)} has no values")
        seen.add(variable.field)
    check_combinations(variables)
    for variable in variables:
        if len(set(map(str, variable.values))) != len(variable.values):
            raise MatrixError(f"{variable_label(variable.field)} lists a value twice")
    try:
        return [[read_value(v.field, value) for value in v.values] for v in variables]
    except library.LibraryVariableError as exc:
        raise MatrixError(str(exc)) from exc


def check_combinations(variables: Sequence[Variable]) -> None:
    """MatrixError when the values make more combinations than MAX_COMBINATIONS: counted from the
    number of values alone, before anything is read or expanded (each combination is a spec checked
    against the inventory: a million of them from a 2 kB request took minutes and gigabytes)."""
    counts = [len(variable.values) for variable in variables]
    if (combinations := math.prod(counts)) <= MAX_COMBINATIONS:
        return
    made = " × ".join(f"{count:,}" for count in counts)
    raise MatrixError(
        f"{made} values make {combinations:,} combinations: a campaign's values may make at most "
        f"{MAX_COMBINATIONS:,} (and it may have at most {MAX_CONFIGURATIONS} configurations). Sweep fewer values."
    )


def expand(base: RunSpec, variables: Sequence[Variable], inventory: Inventory) -> list[Cell]:
    """Every combination of the variables' values (the first variable varies slowest), each
    checked like a run queued by hand; a combination equal to an earlier one is refused."""
    changes = [[read(base) for read in values] for values in check_variables(variables)]
    cells: list[Cell] = []
    first_with: dict[RunSpec, str] = {}
    for combination in itertools.product(*changes):
        spec = base
        for change in combination:
            spec = spec.replace(**_merged(spec, change))
        spec = _follow_device(base, spec, variables, inventory)
        spec = library.follow_script(base, spec, {v.field for v in variables}, inventory.scripts)
        shown = tuple(
            (variable_label(v.field), _shown(v.field, change, inventory))
            for v, change in zip(variables, combination, strict=True)
        )
        errors = spec_errors(spec, inventory)
        cell = Cell(values=shown, spec=spec, errors=errors)
        if not errors and spec in first_with:
            cell = Cell(values=shown, spec=spec, errors={"__all__": [f"the same run as {first_with[spec]}"]})
        elif not errors:
            first_with[spec] = cell.label
        cells.append(cell)
    return cells


def _merged(spec: RunSpec, change: Mapping[str, Any]) -> Mapping[str, Any]:
    """A change of one parameter keeps the others (several may be swept at once)."""
    if "workload_params" not in change:
        return change
    return {**change, "workload_params": dict(spec.workload_params) | dict(change["workload_params"])}


def _follow_device(base: RunSpec, spec: RunSpec, variables: Sequence[Variable], inventory: Inventory) -> RunSpec:
    """A varied device moves the run to its host, with that host's twin of the base install."""
    if "device" not in {v.field for v in variables}:
        return spec
    device = inventory.devices.get(spec.device_id)
    if device is None:
        return spec
    spec = spec.replace(server_host_id=device.host_id)
    if "pg_install" in {v.field for v in variables}:
        return spec
    wanted = inventory.installs.get(base.pg_install_id)
    twins = [
        install
        for install in inventory.installs.values()
        if install.host_id == device.host_id
        and wanted is not None
        and (install.version, install.block_size) == (wanted.version, wanted.block_size)
    ]
    return spec.replace(pg_install_id=twins[0].pk) if twins else spec


def _shown(variable: str, change: Mapping[str, Any], inventory: Inventory) -> str:
    if variable == library.SCRIPT_VARIABLE or library.is_param(variable):
        return library.shown(variable, change, inventory.scripts)
    if variable == "device":
        device = inventory.devices.get(change["device_id"])
        return f"{device.host.name}:{device.name}" if device else f"device {change['device_id']}"
    if variable == "pg_install":
        install = inventory.installs.get(change["pg_install_id"])
        return (
            f"{install.host.name}: PostgreSQL {install.version}, {install.block_size // 1024} kB pages"
            if install
            else "?"
        )
    if variable == "client_host":
        ids = change["client_host_ids"]
        names = "+".join(host.name if (host := inventory.hosts.get(pk)) else f"host {pk}" for pk in ids)
        return f"pgbench on {names}" if ids else "pgbench on the server"
    if variable == "clients":
        return f"{change['clients']} clients/{change['threads']} threads"
    if variable == "scale":
        return f"scale {change['scale']}"
    if variable in ("cache_state", "data_state"):
        return f"{change[variable]} {variable.removesuffix('_state')}"
    if variable == "settle_s":
        return f"settle ≤ {change['settle_s']} s"
    if variable in ("driver", "workload"):
        return f"{change['driver']} {change['workload']}" if variable == "driver" else change["workload"]
    if variable in (*INIT_FIELDS, *SYSBENCH_FIELDS, "latency_limit_ms", "warmup_run_s", "warmup_run_clients"):
        driver = Driver.SYSBENCH if variable in SYSBENCH_FIELDS else Driver.PGBENCH  # the driver that uses it
        return spec_value(Run(driver=driver, **change), variable, with_label=True)  # "4 partitions", "unlogged tables"
    ((name, value),) = change.items()
    text = "" if value is None else str(value).replace("\n", "; ")
    return text or EMPTY_VALUES.get(name, NONE_SHOWN)  # in runs.bench.spec_labels' words, as everywhere


def run_order(configurations: int, repetitions: int, seed: int | None = None) -> list[tuple[int, int]]:
    """(configuration index, repetition) in queue order: round by round (repetition 1 of every
    configuration, then 2, …); with a seed, each round in its own shuffled order."""
    shuffler = random.Random(seed) if seed is not None else None  # noqa: S311 - an order, not a secret
    order: list[tuple[int, int]] = []
    for repetition in range(1, repetitions + 1):
        indices = list(range(configurations))
        if shuffler is not None:
            shuffler.shuffle(indices)
        order.extend((index, repetition) for index in indices)
    return order


def variables_from_json(data: Any) -> list[Variable]:
    """[{"field": "mount_options", "values": [...]}, ...] (stored campaigns, the API)."""
    if not isinstance(data, list):
        raise MatrixError('variables are a list of {"field": …, "values": […]} objects')
    variables = []
    for item in data:
        if not isinstance(item, dict) or set(item) != {"field", "values"} or not isinstance(item["values"], list):
            raise MatrixError(f'each variable is {{"field": …, "values": […]}}, not {item!r:.60}')
        variables.append(Variable(field=str(item["field"]), values=tuple(item["values"])))
    check_variables(variables)
    return variables


def variables_as_json(variables: Iterable[Variable]) -> list[dict[str, Any]]:
    return [{"field": v.field, "values": list(v.values)} for v in variables]
