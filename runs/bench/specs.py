"""A run's specification as a value, and the one path that validates it.

The queue form, the API (through the form) and campaign expansion all ask "may this run be
queued?", and must answer alike, so the answer lives here. A RunSpec is what a run is asked to
do: every field of the queue form, inventory rows by id. It is frozen, so a campaign varies one
field with replace() and compares two specs with differences(). spec_checks.spec_errors() is
every problem with a spec, keyed by the form field it belongs to; this module holds the rules of
single fields, which the Run model's fields give.

Each rule has one source: the limits of single fields are the Run model's own fields (their
choices and validators), and the options are checked by the lab layer's pure module
(runs.lab.options), the very functions that apply them on the host. Nothing here touches a lab
machine.

A run may name several client hosts (client_host_ids, in order; none: pgbench on the server), each
against its own database on the server or all against one (shared_database). They are not a
column of the run but its RunClient rows, so they are the one spec field handled by name below.
"""

import dataclasses
import hashlib
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from runs.lab.pgbench.options import InitOptions
from runs.models import Driver, Run


@dataclass(frozen=True)
class RunSpec:
    """What a run is asked to do: every field of the queue form, by value (ids for inventory rows)."""

    server_host_id: int
    device_id: int
    filesystem: str
    pg_install_id: int
    mkfs_options: str = ""
    mount_options: str = ""
    pg_settings: str = ""
    driver: str = "pgbench"  # or "sysbench": then the workload is one of its OLTP tests
    workload: str = "tpcb-like"
    custom_script: str = ""
    sysbench_tables: int = 1
    sysbench_table_size: int = 10_000
    library_script_id: int | None = None  # with workload "library": a WorkloadScript (one version)
    workload_params: tuple[tuple[str, float], ...] = ()  # its parameters' values, by name (sorted pairs)
    scale: int = 10
    clients: int = 4
    threads: int = 2
    duration_s: int = 60
    warmup_s: int = 0
    warmup_run_s: int = 0  # a separate pgbench before the measurement; 0: none
    warmup_run_clients: int | None = None  # its clients; None: the measurement's
    query_mode: str = "simple"
    rate_limit_tps: float | None = None
    log_sampling_rate: float | None = 1.0
    # pgbench's own options: the limit it holds latency to, and how it loads the data (-i).
    latency_limit_ms: float | None = None
    partitions: int = 0
    partition_method: str = ""  # "range" or "hash" with partitions; "": pgbench's default (range)
    fillfactor: int = 100
    unlogged_tables: bool = False
    foreign_keys: bool = False
    init_steps: str = ""  # -I; "": pgbench's default (dtgvp)
    client_host_ids: tuple[int, ...] = ()  # in the run's order: client 1, 2, …
    shared_database: bool = False  # all client hosts against one database, else one each
    random_seed: int | None = None  # pgbench --random-seed; None: picked when queued (bench.services.runs)
    cache_state: str = "warm"  # or "cold": sync, drop caches, restart PostgreSQL before measuring
    data_state: str = "reused"  # or "fresh", "frozen" (VACUUM FREEZE + CHECKPOINT after loading)
    checkpoint_before: bool = True
    settle_s: int = 5  # the longest wait for a quiet device before measuring

    def __post_init__(self) -> None:
        # One spelling per spec, so equal runs compare (and hash) equal: a tuple, whatever the
        # caller passed, and "one database for all" only with two client hosts or more.
        clients = tuple(self.client_host_ids or ())
        object.__setattr__(self, "client_host_ids", clients)
        object.__setattr__(self, "shared_database", bool(self.shared_database) and len(clients) >= 2)
        # The parameters as sorted (name, value) pairs, whether given as a dict (a form, a run, JSON)
        # or as pairs: a spec stays hashable, and equal values compare equal in any order.
        params = self.workload_params or ()
        pairs = params.items() if isinstance(params, Mapping) else params
        object.__setattr__(self, "workload_params", tuple(sorted((str(k), _hashable(v)) for k, v in pairs)))
        if self.driver == Driver.SYSBENCH and isinstance(self.clients, int):
            # sysbench runs one thread per client (its --threads are its connections): pgbench's -j
            # has no meaning there, so a sysbench spec's threads are its clients (runs.bench.driver_checks).
            object.__setattr__(self, "threads", self.clients)

    @classmethod
    def from_run(cls, run: Run) -> "RunSpec":
        """The spec of a saved run (prefetch `run_clients` when reading many)."""
        return cls(**{name: run_spec_value(run, name) for name in SPEC_FIELDS})

    @classmethod
    def from_form_data(cls, cleaned_data: Mapping[str, Any]) -> "RunSpec":
        """The spec a queue form's cleaned data asks for (inventory rows become their ids).

        A field missing from the data (its form field refused the input) is None here: spec_errors
        then calls it missing and skips the checks that need it, rather than checking a guess."""
        values: dict[str, Any] = {name: cleaned_data.get(FORM_FIELDS[name]) for name in SPEC_FIELDS}
        values["client_host_ids"] = [_row_id(v) for v in values["client_host_ids"] or ()]
        return cls(**{name: _row_id(v) for name, v in values.items()})

    @classmethod
    def from_json(cls, data: object) -> "RunSpec":
        """The spec in `data` (stored campaign JSON, API input); ValueError naming the field if
        a key is unknown, a field without a default is missing, or a value has the wrong type."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a run specification is a JSON object, not {type(data).__name__}")
        if OLD_CLIENT_FIELD in data:
            data = _from_one_client(data)
        unknown = [str(key) for key in data if key not in SPEC_FIELDS]
        if unknown:
            raise ValueError(f"unknown field {', '.join(unknown)}: a run specification has {', '.join(SPEC_FIELDS)}")
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            if field.name in data:
                values[field.name] = _typed(field.name, data[field.name])
            elif field.default is dataclasses.MISSING:
                raise ValueError(f"{field.name} is missing: a run specification needs it")
        return cls(**values)

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {
            CLIENTS: list(self.client_host_ids),
            PARAMS: dict(self.workload_params),
        }

    def replace(self, **changes: Any) -> "RunSpec":
        return dataclasses.replace(self, **changes)

    def differences(self, other: "RunSpec") -> tuple[str, ...]:
        """The fields whose values differ, in field order."""
        return tuple(name for name in SPEC_FIELDS if getattr(self, name) != getattr(other, name))

    def run_fields(self) -> dict[str, Any]:
        """Keyword arguments for Run(**...): the spec's field names are the model's attnames.
        The client hosts are not among them: they are the run's RunClient rows, which
        bench.services.runs.runs_enqueue writes from client_host_ids."""
        fields = {name: getattr(self, name) for name in SPEC_FIELDS if name != CLIENTS}
        return fields | {PARAMS: dict(self.workload_params)}


CLIENTS = "client_host_ids"  # the spec field that is not a column of Run (its RunClient rows)
PARAMS = "workload_params"  # a dict on the run (a JSON column), sorted pairs in the spec
OLD_CLIENT_FIELD = "client_host_id"  # one client host, as campaigns stored it before there were several
SPEC_FIELDS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(RunSpec))
# What each run of one configuration has of its own: repetitions differ in their seeds (each picked
# when queued, unless given), and are still one configuration (a comparison's default group).
PER_RUN_FIELDS = ("random_seed",)
# pgbench -i's options beyond the scale: a database loaded with others is another database.
INIT_FIELDS = ("partitions", "partition_method", "fillfactor", "unlogged_tables", "foreign_keys", "init_steps")


def init_options(source: "RunSpec | Run") -> InitOptions:
    """pgbench -i's options of a spec or a saved run (the same fields by the same names)."""
    return InitOptions(scale=source.scale, **{name: getattr(source, name) for name in INIT_FIELDS})


CONFIGURATION_FIELDS = tuple(name for name in SPEC_FIELDS if name not in PER_RUN_FIELDS)
CONFIGURATION_KEY_LENGTH = 16


def configuration_key(spec: RunSpec) -> str:
    """16 hex digits of SHA-256 over the spec's CONFIGURATION_FIELDS as JSON with sorted keys: the
    regression watch's series key (runs.watch.series says why each field is in or out). Here, not
    in the watch, because a run is given its key when it is queued (runs.bench.services.runs)."""
    # Tuples (client hosts, parameters' pairs) are written as JSON lists.
    configuration = {name: getattr(spec, name) for name in CONFIGURATION_FIELDS}
    configuration[PARAMS] = [(name, _same_number(value)) for name, value in spec.workload_params]
    text = json.dumps(configuration, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:CONFIGURATION_KEY_LENGTH]


def _same_number(value: Any) -> Any:
    """2.0 as 2: a parameter typed "2" in the form is an int, "2.0" in a campaign or a declared
    default of 2.0 a float, and the spec holds them equal (2 == 2.0), so the key must too."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# The Run field behind each spec field (a KeyError here: the spec and the model have drifted).
_BY_ATTNAME = {field.attname: field for field in Run._meta.concrete_fields}
MODEL_FIELDS = {name: _BY_ATTNAME[name] for name in SPEC_FIELDS if name != CLIENTS}
_CLIENTS_FIELD = Run._meta.get_field("client_hosts")
# The form field (and error key) of each spec field: the model field's name, "device" for device_id.
FORM_FIELDS: dict[str, str] = {name: field.name for name, field in MODEL_FIELDS.items()} | {
    CLIENTS: _CLIENTS_FIELD.name
}
FIELD_LABELS: dict[str, str] = {name: str(field.verbose_name) for name, field in MODEL_FIELDS.items()} | {
    CLIENTS: str(_CLIENTS_FIELD.verbose_name)
}
CLIENT_FIELD = FORM_FIELDS[CLIENTS]  # "client_hosts": where their problems are said
NUMBER_FIELDS: tuple[str, ...] = tuple(
    name for name, field in MODEL_FIELDS.items() if isinstance(field, models.IntegerField | models.FloatField)
)


def run_spec_value(run: Run, name: str) -> Any:
    """A saved run's value of one spec field, as the spec holds it: the client hosts as a tuple
    of ids in their order (from `run_clients`, prefetched or not), the parameters as sorted pairs."""
    if name == CLIENTS:
        return tuple(run_client.host_id for run_client in run.run_clients.all())
    if name == PARAMS:
        return RunSpec(0, 0, "", 0, workload_params=run.workload_params).workload_params  # as the spec holds them
    return getattr(run, name)


def _hashable(value: Any) -> Any:
    """A parameter's value as given, or, if a list or an object, its JSON text (spec_errors then
    says it is not a number)."""
    return value if value is None or isinstance(value, int | float | str) else json.dumps(value, default=str)


def _row_id(value: Any) -> Any:
    return value.pk if isinstance(value, models.Model) else value


def _from_one_client(data: Mapping[Any, Any]) -> dict[Any, Any]:
    """A spec stored with one client host (client_host_id: an id or null) as a list of them."""
    if CLIENTS in data:
        raise ValueError(f"give {CLIENTS} (a list of host ids), not {OLD_CLIENT_FIELD} too")
    values = {key: value for key, value in data.items() if key != OLD_CLIENT_FIELD}
    one = data[OLD_CLIENT_FIELD]
    if one is not None and (not isinstance(one, int) or isinstance(one, bool)):
        raise ValueError(f"{OLD_CLIENT_FIELD} must be a whole number or null, not {one!r:.60}")
    values[CLIENTS] = [] if one is None else [one]
    return values


def field_limits(name: str) -> tuple[float | None, float | None]:
    """The smallest and the largest value the Run model lets a number field take (its validators,
    the database column's range among them): the queue form's min and max, and the messages."""
    validators = MODEL_FIELDS[name].validators
    lows = [v.limit_value for v in validators if isinstance(v, MinValueValidator)]
    highs = [v.limit_value for v in validators if isinstance(v, MaxValueValidator)]
    return (max(lows) if lows else None, min(highs) if highs else None)


def _number(value: float) -> str:
    """1 not 1.0, 0.0001 not 1e-04, and 1e+30 rather than thirty-one digits."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def range_problem(name: str, value: float) -> str | None:
    """What is wrong with a number out of its field's range, naming the range; None if within."""
    low, high = field_limits(name)
    if (low is None or value >= low) and (high is None or value <= high):
        return None
    if low is not None and high is not None:
        allowed = f"between {_number(low)} and {_number(high)}"
    elif low is not None:
        allowed = f"at least {_number(low)}"
    else:
        allowed = f"at most {_number(high or 0)}"
    if name.endswith("_s") and high and high % 86400 == 0:
        allowed += f" ({int(high) // 86400} days)"  # seconds nobody reads at a glance
    return f"{FIELD_LABELS[name]} must be {allowed}; got {_number(value)}."


_TYPE_WORDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", type(None): "null"}
_HINTS = typing.get_type_hints(RunSpec)


def _typed(name: str, value: object) -> object:
    if name == PARAMS:
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return dict(value)  # each value is checked against its declared range by spec_errors
        raise ValueError(f'{name} must be an object of parameter values, {{"skew": 1.5}}, not {value!r:.60}')
    if name == CLIENTS:
        if isinstance(value, list | tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return tuple(value)
        raise ValueError(f"{name} must be a list of host ids (whole numbers), not {value!r:.60}")
    allowed = typing.get_args(_HINTS[name]) or (_HINTS[name],)
    if value is None and type(None) in allowed:
        return None
    if isinstance(value, bool) and bool in allowed:
        return value
    if not isinstance(value, bool):  # JSON true is not 1
        if isinstance(value, int) and int in allowed:
            return value
        if isinstance(value, int | float) and float in allowed:
            return float(value)
        if isinstance(value, str) and str in allowed:
            return value
    words = " or ".join(_TYPE_WORDS[kind] for kind in allowed)
    raise ValueError(f"{name} must be {words}, not {value!r:.60}")
