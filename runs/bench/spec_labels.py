"""A run's specification fields as a person reads them: "lab1:ssd", "noatime", "8 clients".

Comparison groups are labelled with these, so two groups never read alike unless they are.
"""

from collections.abc import Callable

from runs.bench.driver_checks import unused_fields
from runs.models import Run


def _install(run: Run) -> str:
    """The install, with the page size the run's server reported (comparisons annotate it as
    env_block_size, runs.compare.differences) rather than the one the inventory says, when they differ."""
    install = run.pg_install
    recorded = getattr(run, "env_block_size", None)
    pages = f"{(int(recorded) if recorded else install.block_size) // 1024} kB pages"
    if not install.label:
        return f"PostgreSQL {install.version}, {pages}"
    return install.label if pages in install.label else f"{install.label} (ran with {pages})"


def _settings(run: Run) -> str:
    lines = [" ".join(line.split()) for line in run.pg_settings.splitlines() if line.strip()]
    return "; ".join(lines)


def client_names(run: Run) -> str:
    """ "lab2+lab3": the run's client hosts in their order ("" for none; prefetch run_clients__host)."""
    return "+".join(host.name for host in run.client_host_list)


def _databases(run: Run, alone: bool) -> str:
    """The server's databases pgbench ran against: one, unless two client hosts or more had their own."""
    if len(run.client_host_list) < 2:
        return "one database"
    if run.shared_database:
        return "one for all client hosts" if alone else "one database for all client hosts"
    return "one per client host" if alone else "a database per client host"


# A field left empty, in the same words wherever it is shown: group labels, "what differs", the
# campaign matrix (runs.campaigns.matrix), the exports. Never "(none)" in one place and words in another.
EMPTY_VALUES = {
    "mkfs_options": "default mkfs options",
    "mount_options": "default mount options",
    "pg_settings": "default settings",
    "custom_script": "no script",
    "rate_limit_tps": "no rate limit",
    "log_sampling_rate": "no transaction log",
    "client_host_ids": "pgbench on the server",
    "random_seed": "seed picked when queued",
    "latency_limit_ms": "no latency limit",
    "partition_method": "default partition method",
    "init_steps": "default init steps",
    "warmup_run_clients": "the measurement's clients",
    "library_script_id": "no library script",
    "workload_params": "no parameters",
}


def _params(run: Run, joiner: str) -> str:
    """ "skew 1.3, rows 3": a library workload's parameters, by name."""
    values = run.workload_params or {}
    return ", ".join(f"{name}{joiner}{value:g}" if isinstance(value, int | float) else f"{name}{joiner}{value}"
                     for name, value in sorted(values.items()))  # fmt: skip


def _or_empty(field: str, text: str) -> str:
    return text or EMPTY_VALUES[field]


def _lines(text: str) -> int:
    return len([line for line in text.splitlines() if line.strip()])


# Per field: (the value alone, the value with what it is) - the first for a table with a
# "field" column, the second for a group's label. A value alone carries no unit its field's label
# (runs.bench.specs.FIELD_LABELS) says already: "duration (s)" reads 30, not "30 s".
_FORMATS: dict[str, tuple[Callable[[Run], str], Callable[[Run], str]]] = {
    "server_host_id": (lambda r: r.server_host.name, lambda r: r.server_host.name),
    "device_id": (lambda r: str(r.device), lambda r: str(r.device)),
    "filesystem": (lambda r: r.filesystem, lambda r: r.filesystem),
    "pg_install_id": (_install, _install),
    "mkfs_options": (
        lambda r: _or_empty("mkfs_options", r.mkfs_options),
        lambda r: f"mkfs {r.mkfs_options}" if r.mkfs_options else EMPTY_VALUES["mkfs_options"],
    ),
    "mount_options": (
        lambda r: _or_empty("mount_options", r.mount_options),
        lambda r: _or_empty("mount_options", r.mount_options),
    ),
    "pg_settings": (lambda r: _or_empty("pg_settings", _settings(r)), lambda r: _or_empty("pg_settings", _settings(r))),
    "driver": (lambda r: r.driver, lambda r: f"driver {r.driver}"),
    "workload": (lambda r: r.workload, lambda r: r.workload),
    "custom_script": (
        lambda r: f"{_lines(r.custom_script)} lines" if r.custom_script else EMPTY_VALUES["custom_script"],
        lambda r: f"script of {_lines(r.custom_script)} lines" if r.custom_script else EMPTY_VALUES["custom_script"],
    ),
    "sysbench_tables": (lambda r: str(r.sysbench_tables), lambda r: f"{r.sysbench_tables} sysbench tables"),
    "sysbench_table_size": (
        lambda r: f"{r.sysbench_table_size:,} rows",
        lambda r: f"{r.sysbench_table_size:,} rows a table",
    ),
    "library_script_id": (
        lambda r: str(r.library_script) if r.library_script_id else EMPTY_VALUES["library_script_id"],
        lambda r: str(r.library_script) if r.library_script_id else EMPTY_VALUES["library_script_id"],
    ),
    "workload_params": (
        lambda r: _or_empty("workload_params", _params(r, "=")),
        lambda r: _or_empty("workload_params", _params(r, " ")),
    ),
    "scale": (lambda r: str(r.scale), lambda r: f"scale {r.scale}"),
    "clients": (lambda r: str(r.clients), lambda r: f"{r.clients} clients"),
    "threads": (lambda r: str(r.threads), lambda r: f"{r.threads} threads"),
    "duration_s": (lambda r: str(r.duration_s), lambda r: f"{r.duration_s} s"),
    "warmup_s": (lambda r: str(r.warmup_s), lambda r: f"warm-up {r.warmup_s} s"),
    "warmup_run_s": (
        lambda r: str(r.warmup_run_s),
        lambda r: f"warm-up run {r.warmup_run_s} s" if r.warmup_run_s else "no warm-up run",
    ),
    "warmup_run_clients": (
        lambda r: str(r.warmup_run_clients) if r.warmup_run_clients else EMPTY_VALUES["warmup_run_clients"],
        lambda r: (
            f"warm-up run {r.warmup_run_clients} clients"
            if r.warmup_run_clients
            else EMPTY_VALUES["warmup_run_clients"]
        ),
    ),
    "query_mode": (lambda r: r.query_mode, lambda r: f"{r.query_mode} protocol"),
    "rate_limit_tps": (
        lambda r: f"{r.rate_limit_tps:g}" if r.rate_limit_tps else EMPTY_VALUES["rate_limit_tps"],
        lambda r: f"rate {r.rate_limit_tps:g} tps" if r.rate_limit_tps else EMPTY_VALUES["rate_limit_tps"],
    ),
    "log_sampling_rate": (
        lambda r: f"{r.log_sampling_rate:g}" if r.log_sampling_rate else EMPTY_VALUES["log_sampling_rate"],
        lambda r: f"log sampling {r.log_sampling_rate:g}" if r.log_sampling_rate else EMPTY_VALUES["log_sampling_rate"],
    ),
    "latency_limit_ms": (
        lambda r: f"{r.latency_limit_ms:g}" if r.latency_limit_ms else EMPTY_VALUES["latency_limit_ms"],
        lambda r: (
            f"latency limit {r.latency_limit_ms:g} ms" if r.latency_limit_ms else EMPTY_VALUES["latency_limit_ms"]
        ),
    ),
    "partitions": (
        lambda r: str(r.partitions),
        lambda r: f"{r.partitions} partitions" if r.partitions else "not partitioned",
    ),
    "partition_method": (
        lambda r: _or_empty("partition_method", r.partition_method),
        lambda r: f"{r.partition_method} partitions" if r.partition_method else EMPTY_VALUES["partition_method"],
    ),
    "fillfactor": (lambda r: str(r.fillfactor), lambda r: f"fillfactor {r.fillfactor}"),
    "unlogged_tables": (
        lambda r: "yes" if r.unlogged_tables else "no",
        lambda r: "unlogged tables" if r.unlogged_tables else "logged tables",
    ),
    "foreign_keys": (
        lambda r: "yes" if r.foreign_keys else "no",
        lambda r: "foreign keys" if r.foreign_keys else "no foreign keys",
    ),
    "init_steps": (
        lambda r: _or_empty("init_steps", r.init_steps),
        lambda r: f"init steps {r.init_steps}" if r.init_steps else EMPTY_VALUES["init_steps"],
    ),
    "client_host_ids": (
        lambda r: client_names(r) or EMPTY_VALUES["client_host_ids"],
        lambda r: f"pgbench on {client_names(r)}" if client_names(r) else EMPTY_VALUES["client_host_ids"],
    ),
    # False for every run with fewer than two client hosts, which had one database all the same.
    "shared_database": (lambda r: _databases(r, alone=True), lambda r: _databases(r, alone=False)),
    "random_seed": (
        lambda r: str(r.random_seed) if r.random_seed is not None else EMPTY_VALUES["random_seed"],
        lambda r: f"seed {r.random_seed}" if r.random_seed is not None else EMPTY_VALUES["random_seed"],
    ),
    "cache_state": (lambda r: r.cache_state, lambda r: f"{r.cache_state} cache"),
    "data_state": (lambda r: r.data_state, lambda r: f"{r.data_state} data"),
    "checkpoint_before": (
        lambda r: "yes" if r.checkpoint_before else "no",
        lambda r: "CHECKPOINT before" if r.checkpoint_before else "no CHECKPOINT before",
    ),
    "settle_s": (lambda r: str(r.settle_s), lambda r: f"settle ≤ {r.settle_s} s"),
}


def spec_value(run: Run, field: str, *, with_label: bool = False) -> str:
    """The field's value as a person reads it; a field the run's driver does not use is a dash alone,
    and nothing with its label (a group's label leaves it out)."""
    if field in unused_fields(run.driver):
        return "" if with_label else f"– ({run.driver})"
    alone, labelled = _FORMATS[field]
    return (labelled if with_label else alone)(run)
