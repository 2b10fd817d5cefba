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
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runs.bench.driver_checks import DEFAULT_WORKLOADS, DRIVER_WORKLOADS
from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.spec_labels import EMPTY_VALUES, spec_value
from runs.bench.specs import INIT_FIELDS, RunSpec
from runs.campaigns import library_variables as library
from runs.lab.sysbench.options import SYSBENCH_TESTS
from runs.models import MAX_CONFIGURATIONS, CacheState, DataState, Driver, PartitionMethod, Run

NONE_SHOWN = "(none)"
SYSBENCH_FIELDS = ("sysbench_tables", "sysbench_table_size")
# The most combinations a campaign's variables may make: each is expanded and checked (about
# 0.3 ms each), and some are rejected (a filesystem a device cannot take), so more than the
# MAX_CONFIGURATIONS that may be queued, but never the million three variables of 100 values make.
MAX_COMBINATIONS = 5 * MAX_CONFIGURATIONS


class MatrixError(ValueError):
    """A variable or value that cannot be read; str() says which and what is allowed."""


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


# A value read: what it changes in a spec, given the base (the clients' threads default to the base's).
Change = Callable[[RunSpec], dict[str, Any]]


def _whole_number(value: Any, what: str, allowed: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not re.fullmatch(r"\s*[0-9]{1,9}\s*", value):
        raise MatrixError(f"{what}: {value!r:.40} is not a whole number; {allowed}")
    return int(value)


def _fixed(changes: dict[str, Any]) -> Change:
    return lambda base: changes


CLIENTS_ALLOWED = 'give clients as 8, "8" or "8/2" (8 clients on 2 threads) or [8, 2]'


def _clients(value: Any) -> Change:
    """8, "8" (threads: the base's, at most 8), "8/2" or [8, 2] (8 clients on 2 threads)."""
    if isinstance(value, list | tuple) and len(value) == 2:
        clients, threads = (_whole_number(part, "clients", CLIENTS_ALLOWED) for part in value)
        return _fixed({"clients": clients, "threads": threads})
    if not isinstance(value, str):
        clients = _whole_number(value, "clients", CLIENTS_ALLOWED)
        return lambda base: {"clients": clients, "threads": min(base.threads, max(clients, 1))}
    clients_text, _, threads_text = value.partition("/")
    clients = _whole_number(clients_text, "clients", CLIENTS_ALLOWED)
    if threads_text:
        return _fixed({"clients": clients, "threads": _whole_number(threads_text, "clients' threads", CLIENTS_ALLOWED)})
    return lambda base: {"clients": clients, "threads": min(base.threads, max(clients, 1))}


def _text_value(value: Any, what: str) -> str:
    """A text variable's value: text, or null for none."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MatrixError(f'{what}: {value!r:.40} is not text; give each value as text ("…"), or null for none')
    return value


def _settings(value: Any) -> Change:
    """Settings separated by ";" or by new lines, as `name = value` lines."""
    text = _text_value(value, VARIABLE_LABELS["pg_settings"])
    if text.strip() in (NONE_SHOWN, EMPTY_VALUES["pg_settings"]):
        return _fixed({"pg_settings": ""})
    lines = [part.strip() for part in re.split(r"[;\n]", text) if part.strip()]
    return _fixed({"pg_settings": "\n".join(lines)})


def _row(attname: str) -> Callable[[Any], Change]:
    what = attname.removesuffix("_id").replace("_", " ")

    def read(value: Any) -> Change:
        return _fixed({attname: _whole_number(value, what, f"give the {what}'s id")})

    return read


CLIENT_HOSTS_ALLOWED = 'give a host id, several as [3, 4] or "3+4", or null for pgbench on the server'


def _client_hosts(value: Any) -> Change:
    """None or "" (pgbench on the server), a host id, or several: a list of ids or "3+4". The
    base's shared_database stays: it applies when the value names two hosts or more."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return _fixed({"client_host_ids": ()})
    parts = value if isinstance(value, list | tuple) else value.split("+") if isinstance(value, str) else [value]
    ids = tuple(_whole_number(part, "client host", CLIENT_HOSTS_ALLOWED) for part in parts)
    return _fixed({"client_host_ids": ids})


def _text(name: str) -> Callable[[Any], Change]:
    def read(value: Any) -> Change:
        text = _text_value(value, VARIABLE_LABELS[name]).strip()
        return _fixed({name: "" if text in (NONE_SHOWN, EMPTY_VALUES.get(name)) else text})

    return read


def _number(name: str) -> Callable[[Any], Change]:
    return lambda value: _fixed({name: _whole_number(value, name, f'give {name} as a whole number, 10 or "10"')})


def _choice(name: str, allowed: Sequence[str]) -> Callable[[Any], Change]:
    def read(value: Any) -> Change:
        text = value.strip() if isinstance(value, str) else value
        if text not in allowed:
            raise MatrixError(f"{VARIABLE_LABELS[name]}: {value!r:.40} is not one of {', '.join(allowed)}")
        return _fixed({name: text})

    return read


def _workload(value: Any) -> Change:
    """A workload, and with it its driver: a sysbench test runs on sysbench, the rest on pgbench,
    so one campaign compares tpcb-like with oltp_read_write."""
    text = _text_value(value, VARIABLE_LABELS["workload"]).strip()
    return _fixed({"workload": text, "driver": Driver.SYSBENCH if text in SYSBENCH_TESTS else Driver.PGBENCH})


def _driver(value: Any) -> Change:
    """A driver, with the base's workload if it is one of the driver's, else the driver's default
    (tpcb-like, oltp_read_write: both read and write)."""
    driver = value.strip() if isinstance(value, str) else value
    if driver not in Driver.values:
        raise MatrixError(f"driver: {value!r:.40} is not one of {', '.join(Driver.values)}")
    return lambda base: {
        "driver": driver,
        "workload": base.workload if base.workload in DRIVER_WORKLOADS[driver] else DEFAULT_WORKLOADS[driver],
    }


SEED_ALLOWED = 'give the seed as a whole number, 42 or "42", or null for one picked for each run'


def _seed(value: Any) -> Change:
    """A seed every run of the configuration uses, or None: each run its own, picked when queued."""
    if value is None or (isinstance(value, str) and value.strip() in ("", NONE_SHOWN)):
        return _fixed({"random_seed": None})
    return _fixed({"random_seed": _whole_number(value, "random seed", SEED_ALLOWED)})


def _flag(name: str) -> Callable[[Any], Change]:
    """true/false, or "yes"/"no" as the matrix page's text says them."""

    def read(value: Any) -> Change:
        text = value.strip().lower() if isinstance(value, str) else value
        if text in (True, "yes", "true"):
            return _fixed({name: True})
        if text in (False, "no", "false"):
            return _fixed({name: False})
        raise MatrixError(f"{VARIABLE_LABELS[name]}: {value!r:.40} is not yes or no; give true or false")

    return read


def _limit_ms(name: str) -> Callable[[Any], Change]:
    """A number of milliseconds, or null for no limit."""

    def read(value: Any) -> Change:
        if value is None or (isinstance(value, str) and value.strip() in ("", NONE_SHOWN, EMPTY_VALUES.get(name))):
            return _fixed({name: None})
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):  # a list or an object in the JSON, or text
            number = None
        if number is None:
            raise MatrixError(f"{VARIABLE_LABELS[name]}: {value!r:.40} is not a number; give milliseconds, or null")
        return _fixed({name: number})

    return read


# How each variable reads one value as given: MatrixError (naming the variable and what it takes)
# or what the value changes in a spec. Read when the variables are checked, before any expansion.
VARIABLES: dict[str, Callable[[Any], Change]] = {
    "device": _row("device_id"),
    "filesystem": _text("filesystem"),
    "mkfs_options": _text("mkfs_options"),
    "mount_options": _text("mount_options"),
    "pg_install": _row("pg_install_id"),
    "pg_settings": _settings,
    "scale": _number("scale"),
    "clients": _clients,
    "driver": _driver,
    "workload": _workload,
    "sysbench_tables": _number("sysbench_tables"),
    "sysbench_table_size": _number("sysbench_table_size"),
    "query_mode": _text("query_mode"),
    "client_host": _client_hosts,
    "random_seed": _seed,
    "cache_state": _choice("cache_state", CacheState.values),
    "data_state": _choice("data_state", DataState.values),
    "settle_s": _number("settle_s"),
    "warmup_run_s": _number("warmup_run_s"),
    "warmup_run_clients": _number("warmup_run_clients"),
    "latency_limit_ms": _limit_ms("latency_limit_ms"),
    "partitions": _number("partitions"),
    "partition_method": _choice("partition_method", ("", *PartitionMethod.values)),
    "fillfactor": _number("fillfactor"),
    "unlogged_tables": _flag("unlogged_tables"),
    "foreign_keys": _flag("foreign_keys"),
    "init_steps": _text("init_steps"),
}
VARIABLE_LABELS = {
    "device": "device",
    "filesystem": "filesystem",
    "mkfs_options": "mkfs options",
    "mount_options": "mount options",
    "pg_install": "PostgreSQL install",
    "pg_settings": "PostgreSQL settings",
    "scale": "scale",
    "clients": "clients/threads",
    "driver": "driver",
    "workload": "workload",
    "sysbench_tables": "sysbench tables",
    "sysbench_table_size": "sysbench table size (rows)",
    "query_mode": "query mode",
    "client_host": "client hosts",
    "random_seed": "random seed",
    "cache_state": "cache state",
    "data_state": "data state",
    "settle_s": "settle (s)",
    "warmup_run_s": "warm-up run (s)",
    "warmup_run_clients": "warm-up run clients",
    "latency_limit_ms": "latency limit (ms)",
    "partitions": "partitions",
    "partition_method": "partition method",
    "fillfactor": "fillfactor",
    "unlogged_tables": "unlogged tables",
    "foreign_keys": "foreign keys",
    "init_steps": "initialisation steps",
}


def variable_reader(field: str) -> Callable[[Any], Change] | None:
    """How a variable reads a value: the fixed ones, the library script, and "param:<name>"."""
    if field == library.SCRIPT_VARIABLE:
        return library.read_script
    if library.is_param(field):
        return library.read_param(field)
    return VARIABLES.get(field)


def variable_label(field: str) -> str:
    if field == library.SCRIPT_VARIABLE:
        return "library script"
    return library.param_label(field) if library.is_param(field) else VARIABLE_LABELS[field]


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
        return [[_read(v.field, value) for value in v.values] for v in variables]
    except library.LibraryVariableError as exc:
        raise MatrixError(str(exc)) from exc


def _read(field: str, value: Any) -> Change:
    reader = variable_reader(field)
    assert reader is not None  # checked above
    return reader(value)


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
