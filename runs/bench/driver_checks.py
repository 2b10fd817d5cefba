"""What each workload driver can run: the rules spec_checks.spec_errors applies between a run's driver
and its other fields. Pure: values in, (form field, message) pairs out.

A run's driver is pgbench or sysbench (Run.driver). Its workload must be one of the driver's own
(pgbench's built-in scripts or a custom script; sysbench's OLTP tests), and a field the driver
cannot honour must keep the value that means "not used", so nothing a person set is silently
ignored: for sysbench, pgbench's script, a library script (the library holds pgbench scripts), query
mode, latency limit, per-transaction log, client hosts, a separate warm-up run, scale and every
`pgbench -i` option; for pgbench, sysbench's tables and table size. The
"threads" field is pgbench's -j; sysbench runs one thread per client (its --threads is the number of
clients), so a sysbench spec's threads are its clients (RunSpec holds them so).
"""

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from runs.bench.specs import CLIENT_FIELD, MODEL_FIELDS, RunSpec
from runs.lab.errors import InvalidOption
from runs.lab.sysbench.options import SYSBENCH_TESTS, SysbenchOptions
from runs.models import Driver, Workload

Problem = tuple[str, str]  # (form field, message)

PGBENCH_WORKLOADS = tuple(value for value in Workload.values if value not in SYSBENCH_TESTS)
DRIVER_WORKLOADS: dict[str, tuple[str, ...]] = {Driver.PGBENCH: PGBENCH_WORKLOADS, Driver.SYSBENCH: SYSBENCH_TESTS}
# Each driver's workload when a campaign's driver variable leaves the base's to the other driver.
DEFAULT_WORKLOADS: dict[str, str] = {
    Driver.PGBENCH: Workload.TPCB_LIKE.value,
    Driver.SYSBENCH: Workload.OLTP_READ_WRITE.value,
}

# pgbench's own fields, and why sysbench cannot honour each (unused: the Run model's default).
_PGBENCH_ONLY: dict[str, str] = {
    "custom_script": "a custom script is pgbench's; sysbench runs its own OLTP tests",
    "query_mode": "the query mode is pgbench's -M; sysbench prepares its statements itself",
    "latency_limit_ms": "sysbench has no latency limit (pgbench's --latency-limit)",
    "scale": "the scale is pgbench's; sysbench's data is its tables × table size",
    "partitions": "partitions are pgbench -i's; sysbench prepare creates its own tables",
    "partition_method": "the partition method is pgbench -i's; sysbench prepare creates its own tables",
    "fillfactor": "the fillfactor is pgbench -i's; sysbench prepare creates its own tables",
    "unlogged_tables": "unlogged tables are pgbench -i's; sysbench prepare creates its own tables",
    "foreign_keys": "foreign keys are pgbench -i's; sysbench prepare creates its own tables",
    "init_steps": "initialisation steps are pgbench -i's; sysbench prepare creates its own tables",
}
_SYSBENCH_ONLY = {"sysbench_tables": "sysbench tables apply", "sysbench_table_size": "a sysbench table size applies"}
# The log sampling values that mean "as pgbench would by default": sysbench keeps no per-transaction log.
_NO_LOG = (None, 1.0)


def unused_fields(driver: str) -> frozenset[str]:
    """The spec fields a run of this driver does not use (their labels say so: runs.bench.spec_labels)."""
    if driver == Driver.SYSBENCH:
        return frozenset({*_PGBENCH_ONLY, "log_sampling_rate"})
    return frozenset(_SYSBENCH_ONLY)


def unused_value(name: str) -> object:
    """The value a field keeps when its driver does not use it (the Run model's default)."""
    return MODEL_FIELDS[name].get_default()


def driver_fields() -> dict[str, object]:
    """What the queue form shows for each driver (static/js/run_form_driver.js): each driver's workloads
    and default one, the fields only one driver uses, and the value a hidden one is sent with."""
    # The warm-up run is pgbench's too (_sysbench_problems refuses it).
    warmup_run = ("warmup_run_s", "warmup_run_clients")
    pgbench_only = [*_PGBENCH_ONLY, *warmup_run, "threads", "log_sampling_rate", CLIENT_FIELD, "shared_database"]
    return {
        "workloads": DRIVER_WORKLOADS,
        "default_workloads": DEFAULT_WORKLOADS,
        "only": {Driver.PGBENCH: pgbench_only, Driver.SYSBENCH: list(_SYSBENCH_ONLY)},
        "unused": {name: unused_value(name) for name in (*_PGBENCH_ONLY, *warmup_run, *_SYSBENCH_ONLY)}
        | {CLIENT_FIELD: False, "shared_database": False},
    }


def driver_problems(spec: RunSpec, ok: Callable[..., bool]) -> list[Problem]:
    """What is wrong between the driver and the rest; `ok(*fields)` says which fields are sound so
    far (a field already refused is not checked again)."""
    if spec.driver == Driver.SYSBENCH:
        return list(_sysbench_problems(spec, ok))
    return list(_pgbench_problems(spec, ok))


def _pgbench_problems(spec: RunSpec, ok: Callable[..., bool]) -> Iterator[Problem]:
    if spec.workload in SYSBENCH_TESTS:
        yield "workload", f"{spec.workload} is a sysbench test: choose driver sysbench, or one of pgbench's workloads"
    for name, words in _SYSBENCH_ONLY.items():
        if ok(name) and getattr(spec, name) != (default := unused_value(name)):
            yield name, f"{words} to driver sysbench only: leave it at {default:,} for pgbench."


def _sysbench_problems(spec: RunSpec, ok: Callable[..., bool]) -> Iterator[Problem]:
    if spec.workload not in SYSBENCH_TESTS:
        yield (
            "workload",
            f"driver sysbench runs one of its OLTP tests ({', '.join(SYSBENCH_TESTS)}); {spec.workload} is "
            "pgbench's: choose a test, or driver pgbench",
        )
        return
    for name, why in _PGBENCH_ONLY.items():
        if getattr(spec, name) != (unused := unused_value(name)):
            shown = "empty" if unused in ("", None) else "no" if unused is False else repr(unused).strip("'")
            yield name, f"{why}: leave it {shown} for driver sysbench."
    if spec.library_script_id is not None or spec.workload_params:
        yield (
            "library_script",
            "The workload library holds pgbench scripts; sysbench runs its own tests: leave the library script "
            "and its parameters empty.",
        )
    if spec.log_sampling_rate not in _NO_LOG:
        yield "log_sampling_rate", "sysbench keeps no per-transaction log: leave the log sampling empty or at 1."
    if spec.warmup_run_s and ok("warmup_run_s"):
        yield (
            "warmup_run_s",
            "A warm-up run is pgbench's; sysbench warms up within its run: set warm-up (s) instead, and warm-up "
            "run (s) to 0.",
        )
    if spec.client_host_ids:
        yield (
            CLIENT_FIELD,
            "benchlab runs sysbench on the server only: leave the client hosts empty for driver sysbench.",
        )
    rate = spec.rate_limit_tps
    if rate is not None and ok("rate_limit_tps") and not float(rate).is_integer():
        yield (
            "rate_limit_tps",
            f"sysbench's --rate takes whole transactions per second: give {round(rate) or 1}, not {rate:g}.",
        )
        rate = None
    yield from _options_problems(spec, ok, rate)


# Which field each of SysbenchOptions' messages is about (they begin with its name).
_MESSAGE_FIELDS = (
    ("sysbench test", "workload"),
    ("sysbench tables", "sysbench_tables"),
    ("sysbench table size", "sysbench_table_size"),
    ("clients", "clients"),
    ("duration", "duration_s"),
    ("warm-up", "warmup_s"),
    ("rate limit", "rate_limit_tps"),
    ("random seed", "random_seed"),
)


def _options_problems(spec: RunSpec, ok: Callable[..., bool], rate: float | None) -> Iterator[Problem]:
    """sysbench's own ranges (runs/lab/sysbench/options.py), each field on its own so each message
    lands beside its field; a field already refused is left out."""
    base = SysbenchOptions(test=spec.workload)
    values: dict[str, dict[str, Any]] = {
        "sysbench_tables": {"tables": spec.sysbench_tables},
        "sysbench_table_size": {"table_size": spec.sysbench_table_size},
        "clients": {"threads": spec.clients},
        "duration_s": {"duration_s": spec.duration_s},
        "warmup_s": {"warmup_s": spec.warmup_s},
        "rate_limit_tps": {"rate_tps": None if rate is None else int(rate)},
        "random_seed": {"random_seed": spec.random_seed},
    }
    for field, change in values.items():
        if not ok(field):
            continue
        try:
            dataclasses.replace(base, **change).validate()
        except InvalidOption as exc:
            message = str(exc)
            yield next((f for prefix, f in _MESSAGE_FIELDS if message.startswith(prefix)), field), message
