"""One run's facts as the method checks read them: from what a finished run recorded, or, before a
run exists, estimated from what it asks for. Pure: a spec and dicts in, a MethodFacts out.

What a run measured wins over what it asked for: the server's own report of fsync says more than
the settings text, the filesystem's mount options as mounted more than as requested, the database's
size as PostgreSQL reported it more than 15 MiB a unit of scale. Keys of Run.environment["method"] are
described in ARCHITECTURE.md ("Method facts"); old runs have none, and their checks then say
"not recorded" rather than guess.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from runs.bench.specs import RunSpec
from runs.common.units import pg_setting_text
from runs.lab.options import parse_settings
from runs.lab.pgbench.scale_room import BYTES_PER_SCALE
from runs.lab.postgres.settings import ALLOWED
from runs.lab.sysbench.options import BYTES_PER_SYSBENCH_ROW

# PostgreSQL's defaults for what the checks read, as SHOW prints them.
DEFAULT_SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "shared_buffers": "128MB",
    "checkpoint_timeout": "5min",
    "max_wal_size": "1GB",
}
BRANCH_LOCKING = frozenset({"tpcb-like", "simple-update"})  # workloads that update pgbench_branches
# Built-in workloads that write (select-only reads; a custom script may do either), sysbench's tests too.
WRITING = BRANCH_LOCKING | frozenset({"oltp_read_write", "oltp_write_only", "oltp_insert"})


@dataclass(frozen=True)
class MethodFacts:
    measured: bool  # from the run's records; False: estimated from its specification
    workload: str
    custom_script: bool
    scale: int
    clients: int  # per pgbench process
    databases: int  # one per client host, or one shared by all
    branch_contenders: int  # the clients that update one database's `scale` branch rows
    duration_s: int
    settings: Mapping[str, str]  # fsync, synchronous_commit, ... as SHOW prints them
    shared_buffers_bytes: int | None
    checkpoint_timeout_s: float | None
    mount_options: tuple[str, ...]
    database_bytes: int | None  # all of the run's databases together
    memory_bytes: int | None  # the server host's RAM
    checkpoints: Mapping[str, Any] | None = None  # environment["method"]["checkpoints"], or counts only
    state: Mapping[str, Any] | None = None
    random_seed: int | None = None
    device: Mapping[str, Any] = field(default_factory=dict)
    host: Mapping[str, Any] = field(default_factory=dict)
    during: Mapping[str, Any] = field(default_factory=dict)
    during_clients: Mapping[str, Any] = field(default_factory=dict)  # client host name -> as `during`
    unlogged_tables: bool = False  # pgbench -i --unlogged-tables: the tables write no WAL

    @property
    def writes(self) -> bool | None:
        """Whether the workload writes; None for a custom script (benchlab does not read its SQL)."""
        return None if self.custom_script else self.workload in WRITING


def spec_facts(spec: RunSpec, memory_bytes: int | None) -> MethodFacts:
    """What a run asking for `spec` is expected to have, before it runs (the queue form, the preview)."""
    databases = 1 if spec.shared_database or not spec.client_host_ids else len(spec.client_host_ids)
    settings = _requested_settings(spec.pg_settings)
    return MethodFacts(
        measured=False,
        workload=spec.workload,
        custom_script=bool(spec.custom_script.strip()),
        scale=spec.scale,
        clients=spec.clients,
        databases=databases,
        branch_contenders=spec.clients * (len(spec.client_host_ids) if spec.shared_database else 1),
        duration_s=spec.duration_s,
        settings=settings,
        shared_buffers_bytes=_amount("shared_buffers", settings),
        checkpoint_timeout_s=_seconds(_amount("checkpoint_timeout", settings)),
        mount_options=_options(spec.mount_options),
        database_bytes=_loaded_bytes(spec) * databases,
        memory_bytes=memory_bytes,
        state=_declared_state(spec),
        random_seed=spec.random_seed,
        unlogged_tables=spec.unlogged_tables,
    )


def _loaded_bytes(spec: RunSpec) -> int:
    """What loading one database leaves: pgbench -i's scale, or sysbench's tables of rows."""
    if spec.driver == "sysbench":
        return spec.sysbench_tables * spec.sysbench_table_size * BYTES_PER_SYSBENCH_ROW
    return spec.scale * BYTES_PER_SCALE


def recorded_facts(spec: RunSpec, environment: Mapping[str, Any], metrics: Mapping[str, Any]) -> MethodFacts:
    """What a run that ran recorded: its specification's facts overridden by its measurements."""
    method = _mapping(environment.get("method"))
    expected = spec_facts(spec, _mapping(environment.get("host")).get("memory_bytes"))
    settings = {**expected.settings, **_server_settings(environment), **_text_values(method.get("settings"))}
    mounted = _mapping(environment.get("filesystem")).get("mount_options")
    return replace(
        expected,
        measured=True,
        settings=settings,
        shared_buffers_bytes=method.get("shared_buffers_bytes") or _amount("shared_buffers", settings),
        checkpoint_timeout_s=_mapping(method.get("settings")).get("checkpoint_timeout_s")
        or _seconds(_amount("checkpoint_timeout", settings)),
        mount_options=_options(mounted) if isinstance(mounted, str) else expected.mount_options,
        database_bytes=method.get("database_bytes"),
        checkpoints=method.get("checkpoints") or _checkpoint_counts(metrics),
        state=method.get("state"),  # what the run did, not what it asked for: None if it recorded nothing
        random_seed=method.get("random_seed"),
        device=_mapping(method.get("device")),
        host=_mapping(method.get("host")),
        during=_mapping(method.get("during")),
        during_clients=_mapping(method.get("during_clients")),
    )


def _declared_state(spec: RunSpec) -> dict[str, Any]:
    """The state before measuring the run asks for, as a run records what it did."""
    keys = ("cache_state", "data_state", "checkpoint_before", "settle_s")
    return {key.removesuffix("_state"): getattr(spec, key) for key in keys}


def _requested_settings(text: str) -> dict[str, str]:
    try:
        requested = parse_settings(text or "")
    except ValueError:  # refused when queued; a stored run has valid settings
        requested = {}
    return {**DEFAULT_SETTINGS, **requested}


def _server_settings(environment: Mapping[str, Any]) -> dict[str, str]:
    """The server's own report of its non-default settings (pg_settings.setting, in base units),
    as SHOW prints them, for the names the checks read."""
    postgresql = _mapping(environment.get("postgresql"))
    reported = _mapping(postgresql.get("non_default_settings"))
    block_size = postgresql.get("block_size")
    page = int(block_size) if isinstance(block_size, int | str) and str(block_size).isdigit() else 8192
    return {name: pg_setting_text(name, reported[name], page) for name in DEFAULT_SETTINGS if name in reported}


def _amount(name: str, settings: Mapping[str, str]) -> int | None:
    """A size in bytes or a duration in microseconds, from the setting as SHOW prints it."""
    value = ALLOWED[name].amount(settings.get(name, DEFAULT_SETTINGS[name]))
    return int(value) if value is not None else None


def _seconds(microseconds: int | None) -> float | None:
    return microseconds / 10**6 if microseconds is not None else None


def _checkpoint_counts(metrics: Mapping[str, Any]) -> dict[str, Any] | None:
    """The counts pg_stat_bgwriter gave before runs recorded each checkpoint's time."""
    stats = _mapping(metrics.get("pg_stats"))
    if "checkpoints_timed" not in stats:
        return None
    return {"timed": stats["checkpoints_timed"], "requested": stats.get("checkpoints_requested", 0), "events": None}


def _options(text: str) -> tuple[str, ...]:
    return tuple(option.strip() for option in text.split(",") if option.strip())


def _text_values(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(value).items() if isinstance(v, str)}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
