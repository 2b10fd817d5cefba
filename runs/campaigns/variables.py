"""How a campaign variable reads one value as a person types it ("8/2" for 8 clients on 2 threads,
"shared_buffers=1GB; work_mem=64MB" for settings, a device's id, "(none)"): MatrixError naming the
variable and what it takes, or what the value changes in a spec. Read when the variables are
checked (matrix.check_variables), before any expansion. Pure: nothing written, nothing run.
"""

import re
from collections.abc import Callable, Sequence
from typing import Any

from runs.bench.driver_checks import DEFAULT_WORKLOADS, DRIVER_WORKLOADS
from runs.bench.spec_labels import EMPTY_VALUES
from runs.bench.specs import RunSpec
from runs.campaigns import library_variables as library
from runs.lab.sysbench.options import SYSBENCH_TESTS
from runs.models import CacheState, DataState, Driver, PartitionMethod

NONE_SHOWN = "(none)"


class MatrixError(ValueError):
    """A variable or value that cannot be read; str() says which and what is allowed."""


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


def read_value(field: str, value: Any) -> Change:
    """A value of a variable check_variables has accepted, read."""
    reader = variable_reader(field)
    assert reader is not None  # checked above
    return reader(value)
