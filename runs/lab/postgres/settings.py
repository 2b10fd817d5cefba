"""The PostgreSQL settings an operator may give a benchmark's throw-away cluster, and why the rest are refused.

benchlab writes the operator's settings into the cluster's postgresql.conf, and the server runs as the
postgres OS user on a lab machine. A deny-list of dangerous names was the wrong shape: whatever it forgot
went into the file (logging_collector with log_filename and log_file_mode, jit_provider, ssl_* files,
krb_server_keyfile, an extension's settings, ...). This is an allow-list of what tunes a benchmark, each
setting with the values PostgreSQL accepts for it (runs/lab/postgres/setting_values.py), so a typo fails when
the run is queued rather than when the cluster starts. Every allowed setting is a boolean, a number or an
enum: none takes free text, so no value can name a file, a library, a command or a host.

Names that touch files, libraries, log destinations, the network or commands are refused with a reason
(REFUSED); any other name is simply not on the list. The table covers PostgreSQL 12 to 17; `since` and
`until` mark settings that only some of them have, and PostgreSQL itself refuses one its version lacks.
Ranges are PostgreSQL 15's (pg_settings.min_val/max_val) unless a comment says otherwise; a test checks
the table against a live PostgreSQL 15. Pure: no Django, no I/O.
"""

import re
from dataclasses import dataclass

from runs.lab.errors import InvalidOption
from runs.lab.postgres.setting_values import (
    BOOL_ALIASES,
    DBL_MAX,
    INT_MAX,
    INT_MIN,
    Setting,
    choice,
    count,
    duration,
    flag,
    number,
    size,
)

SETTING_NAME = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")
# Set by benchlab itself (postgres.configure and initdb); a user's override would break the run, not tune it.
# log_line_prefix and log_timezone: benchlab reads the checkpoints' times from the log's time stamps.
RESERVED_SETTINGS = {
    "port", "unix_socket_directories", "listen_addresses", "data_directory", "hba_file", "ident_file",
    "log_line_prefix", "log_timezone",
}  # fmt: skip
# Directives, not settings: an included file could set anything, the reserved settings too.
INCLUDE_DIRECTIVES = {"include", "include_if_exists", "include_dir"}
MAX_BACKENDS = 2**18 - 1  # max_connections and the other process counts

# --- allowed, by what they tune ---------------------------------------------------------------------------

MEMORY = (
    size("shared_buffers", "8kB", 16, INT_MAX // 2, "128MB"),
    size("effective_cache_size", "8kB", 1, INT_MAX, "4GB"),
    size("work_mem", "kB", 64, INT_MAX, "4MB"),
    number("hash_mem_multiplier", 1, 1000, "2.0", since=13),
    size("maintenance_work_mem", "kB", 64, INT_MAX, "64MB"),  # PG 15 refuses below 1MB, PG 17 allows 64kB
    size("autovacuum_work_mem", "kB", -1, INT_MAX, "256MB"),
    size("logical_decoding_work_mem", "kB", 64, INT_MAX, "64MB", since=13),
    size("temp_buffers", "8kB", 100, INT_MAX // 2, "8MB"),
    size("wal_buffers", "8kB", -1, INT_MAX // 8192, "16MB"),
    choice("huge_pages", ("off", "on", "try"), aliases=BOOL_ALIASES),
    size("huge_page_size", "kB", 0, INT_MAX, "2MB", since=14),
    choice("shared_memory_type", ("mmap", "sysv", "windows")),
    choice("dynamic_shared_memory_type", ("posix", "sysv", "mmap", "windows")),
    size("min_dynamic_shared_memory", "MB", 0, INT_MAX, "64MB", since=14),
    # The SLRU caches, sizable since PostgreSQL 17; 0 means a share of shared_buffers.
    size("commit_timestamp_buffers", "8kB", 0, 131072, "1MB", since=17),
    size("multixact_member_buffers", "8kB", 16, 131072, "256kB", since=17),
    size("multixact_offset_buffers", "8kB", 16, 131072, "128kB", since=17),
    size("notify_buffers", "8kB", 16, 131072, "128kB", since=17),
    size("serializable_buffers", "8kB", 16, 131072, "256kB", since=17),
    size("subtransaction_buffers", "8kB", 0, 131072, "1MB", since=17),
    size("transaction_buffers", "8kB", 0, 131072, "1MB", since=17),
)

WAL = (
    choice("wal_level", ("minimal", "replica", "logical"), aliases=("archive", "hot_standby")),
    count("max_wal_senders", 0, MAX_BACKENDS, "0"),  # wal_level = minimal needs 0
    flag("fsync"),
    choice("synchronous_commit", ("on", "off", "local", "remote_write", "remote_apply"), aliases=BOOL_ALIASES),
    choice("wal_sync_method", ("fsync", "fdatasync", "open_sync", "open_datasync", "fsync_writethrough")),
    flag("full_page_writes"),
    # A boolean before PostgreSQL 15, then also the method: pglz, lz4 or zstd.
    choice("wal_compression", ("on", "off", "pglz", "lz4", "zstd"), aliases=BOOL_ALIASES),
    flag("wal_log_hints"),
    flag("wal_init_zero"),
    flag("wal_recycle"),
    count("commit_delay", 0, 100000, "10"),  # microseconds, but PostgreSQL gives it no unit
    count("commit_siblings", 0, 1000, "5"),
    duration("wal_writer_delay", "ms", 1, 10000, "200ms"),
    size("wal_writer_flush_after", "8kB", 0, INT_MAX, "1MB"),
    size("wal_skip_threshold", "kB", 0, INT_MAX, "2MB", since=13),
    size("min_wal_size", "MB", 2, INT_MAX, "80MB"),
    size("max_wal_size", "MB", 2, INT_MAX, "1GB"),
    flag("summarize_wal", since=17),
    duration("wal_summary_keep_time", "min", 0, INT_MAX // 60, "10d", since=17),
)

CHECKPOINTS = (
    duration("checkpoint_timeout", "s", 30, 86400, "5min"),
    number("checkpoint_completion_target", 0, 1, "0.9"),
    size("checkpoint_flush_after", "8kB", 0, 256, "256kB"),
    duration("checkpoint_warning", "s", 0, INT_MAX, "30s"),
)

WRITEBACK = (
    duration("bgwriter_delay", "ms", 10, 10000, "200ms"),
    count("bgwriter_lru_maxpages", 0, INT_MAX // 2, "100"),
    number("bgwriter_lru_multiplier", 0, 10, "2.0"),
    size("bgwriter_flush_after", "8kB", 0, 256, "512kB"),
    size("backend_flush_after", "8kB", 0, 256, "256kB"),
)

IO_CONCURRENCY = (
    count("effective_io_concurrency", 0, 1000, "200"),
    count("maintenance_io_concurrency", 0, 1000, "10", since=13),
    size("io_combine_limit", "8kB", 1, 32, "128kB", since=17),
)

PLANNER = (
    number("seq_page_cost", 0, DBL_MAX, "1.0"),
    number("random_page_cost", 0, DBL_MAX, "1.1"),
    number("cpu_tuple_cost", 0, DBL_MAX, "0.01"),
    number("cpu_index_tuple_cost", 0, DBL_MAX, "0.005"),
    number("cpu_operator_cost", 0, DBL_MAX, "0.0025"),
    count("default_statistics_target", 1, 10000, "100"),
    count("from_collapse_limit", 1, INT_MAX, "8"),
    count("join_collapse_limit", 1, INT_MAX, "8"),
    choice("constraint_exclusion", ("partition", "on", "off"), aliases=BOOL_ALIASES),
    number("cursor_tuple_fraction", 0, 1, "0.1"),
    choice("plan_cache_mode", ("auto", "force_generic_plan", "force_custom_plan")),
    number("recursive_worktable_factor", 0.001, 1e6, "10", since=15),
    flag("geqo"),
    count("geqo_threshold", 2, INT_MAX, "12"),
    count("geqo_effort", 1, 10, "5"),
    count("geqo_pool_size", 0, INT_MAX, "0"),
    count("geqo_generations", 0, INT_MAX, "0"),
    number("geqo_selection_bias", 1.5, 2, "2.0"),
    number("geqo_seed", 0, 1, "0.0"),
    flag("enable_async_append", since=14),
    flag("enable_bitmapscan"),
    flag("enable_gathermerge"),
    flag("enable_group_by_reordering", since=17),
    flag("enable_hashagg"),
    flag("enable_hashjoin"),
    flag("enable_incremental_sort", since=13),
    flag("enable_indexonlyscan"),
    flag("enable_indexscan"),
    flag("enable_material"),
    flag("enable_memoize", since=14),
    flag("enable_mergejoin"),
    flag("enable_nestloop"),
    flag("enable_parallel_append"),
    flag("enable_parallel_hash"),
    flag("enable_partition_pruning"),
    flag("enable_partitionwise_aggregate"),
    flag("enable_partitionwise_join"),
    flag("enable_presorted_aggregate", since=16),
    flag("enable_seqscan"),
    flag("enable_sort"),
    flag("enable_tidscan"),
)

JIT = (  # on/off and when; not jit_provider, which loads a library
    flag("jit"),
    number("jit_above_cost", -1, DBL_MAX, "100000"),
    number("jit_inline_above_cost", -1, DBL_MAX, "500000"),
    number("jit_optimize_above_cost", -1, DBL_MAX, "500000"),
    flag("jit_expressions"),
    flag("jit_tuple_deforming"),
)

VACUUM = (
    flag("autovacuum"),
    count("autovacuum_max_workers", 1, MAX_BACKENDS, "3"),
    duration("autovacuum_naptime", "s", 1, INT_MAX // 1000, "1min"),
    count("autovacuum_vacuum_threshold", 0, INT_MAX, "50"),
    count("autovacuum_vacuum_insert_threshold", -1, INT_MAX, "1000", since=13),
    count("autovacuum_analyze_threshold", 0, INT_MAX, "50"),
    number("autovacuum_vacuum_scale_factor", 0, 100, "0.2"),
    number("autovacuum_vacuum_insert_scale_factor", 0, 100, "0.2", since=13),
    number("autovacuum_analyze_scale_factor", 0, 100, "0.1"),
    count("autovacuum_freeze_max_age", 100000, 2000000000, "200000000"),
    count("autovacuum_multixact_freeze_max_age", 10000, 2000000000, "400000000"),
    duration("autovacuum_vacuum_cost_delay", "ms", -1, 100, "2ms", kind="real"),
    count("autovacuum_vacuum_cost_limit", -1, 10000, "1000"),
    duration("vacuum_cost_delay", "ms", 0, 100, "2ms", kind="real"),
    count("vacuum_cost_limit", 1, 10000, "200"),
    count("vacuum_cost_page_hit", 0, 10000, "1"),
    count("vacuum_cost_page_miss", 0, 10000, "2"),
    count("vacuum_cost_page_dirty", 0, 10000, "20"),
    count("vacuum_freeze_min_age", 0, 1000000000, "50000000"),
    count("vacuum_freeze_table_age", 0, 2000000000, "150000000"),
    count("vacuum_multixact_freeze_min_age", 0, 1000000000, "5000000"),
    count("vacuum_multixact_freeze_table_age", 0, 2000000000, "150000000"),
    count("vacuum_failsafe_age", 0, 2100000000, "1600000000", since=14),
    count("vacuum_multixact_failsafe_age", 0, 2100000000, "1600000000", since=14),
    number("vacuum_cleanup_index_scale_factor", 0, 1e10, "0.1", until=13),
    size("vacuum_buffer_usage_limit", "kB", 0, 16 * 1024 * 1024, "2MB", since=16),  # 0, or 128kB and more
)

PARALLELISM = (
    count("max_worker_processes", 0, MAX_BACKENDS, "8"),
    count("max_parallel_workers", 0, 1024, "8"),
    count("max_parallel_workers_per_gather", 0, 1024, "2"),
    count("max_parallel_maintenance_workers", 0, 1024, "2"),
    flag("parallel_leader_participation"),
    number("parallel_setup_cost", 0, DBL_MAX, "1000"),
    number("parallel_tuple_cost", 0, DBL_MAX, "0.1"),
    size("min_parallel_table_scan_size", "8kB", 0, INT_MAX // 3, "8MB"),
    size("min_parallel_index_scan_size", "8kB", 0, INT_MAX // 3, "512kB"),
)

CONNECTIONS_AND_LOCKS = (
    count("max_connections", 1, MAX_BACKENDS, "100"),
    count("superuser_reserved_connections", 0, MAX_BACKENDS, "3"),
    count("reserved_connections", 0, MAX_BACKENDS, "0", since=16),
    count("max_prepared_transactions", 0, MAX_BACKENDS, "100"),
    count("max_locks_per_transaction", 10, INT_MAX, "64"),
    count("max_pred_locks_per_transaction", 10, INT_MAX, "64"),
    count("max_pred_locks_per_relation", INT_MIN, INT_MAX, "-2"),
    count("max_pred_locks_per_page", 0, INT_MAX, "2"),
    duration("deadlock_timeout", "ms", 1, INT_MAX, "1s"),
    choice("default_transaction_isolation", ("read committed", "repeatable read", "serializable", "read uncommitted")),
)

STATISTICS_COLLECTION = (
    flag("track_activities"),
    flag("track_counts"),
    flag("track_io_timing"),
    flag("track_wal_io_timing", since=14),
    choice("track_functions", ("none", "pl", "all")),
    size("track_activity_query_size", "B", 100, 1048576, "1kB"),
    flag("track_commit_timestamp"),
)

WHAT_IS_LOGGED = (  # into the cluster's own log; where it goes is benchlab's (see REFUSED)
    flag("log_checkpoints"),
    duration("log_autovacuum_min_duration", "ms", -1, INT_MAX, "1s"),
    flag("log_lock_waits"),
    size("log_temp_files", "kB", -1, INT_MAX, "10MB"),
    duration("log_min_duration_statement", "ms", -1, INT_MAX, "250ms"),
)

GROUPS: dict[str, tuple[Setting, ...]] = {
    "memory": MEMORY,
    "WAL": WAL,
    "checkpoints": CHECKPOINTS,
    "background writer and writeback": WRITEBACK,
    "I/O concurrency": IO_CONCURRENCY,
    "planner costs, enable_* switches and statistics target": PLANNER,
    "JIT": JIT,
    "vacuum and autovacuum": VACUUM,
    "parallelism": PARALLELISM,
    "connections and locks": CONNECTIONS_AND_LOCKS,
    "track_* statistics": STATISTICS_COLLECTION,
    "what is logged": WHAT_IS_LOGGED,
}
ALLOWED: dict[str, Setting] = {setting.name: setting for group in GROUPS.values() for setting in group}

# --- refused, with the reason -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    reason: str  # ends "<name> cannot be set from benchlab: "
    names: frozenset[str]
    prefixes: tuple[str, ...] = ()

    def covers(self, name: str) -> bool:
        return name in self.names or name.startswith(self.prefixes)


def _refusal(reason: str, names: str, prefixes: tuple[str, ...] = ()) -> Refusal:
    return Refusal(reason, frozenset(names.split()), prefixes)


REFUSED = (
    _refusal(
        "it chooses where and how logs are written on the host",
        "log_destination logging_collector log_directory log_filename log_file_mode log_truncate_on_rotation"
        " event_source",
        prefixes=("log_rotation_", "syslog_"),
    ),
    _refusal(
        "it runs commands on the host, as a shell command or through a library",
        "archive_command archive_library restore_command archive_cleanup_command recovery_end_command"
        " ssl_passphrase_command",
    ),
    _refusal("archiving hands WAL to a command or library on the host", "archive_mode archive_timeout"),
    _refusal(
        "it loads code into the server from files on the host",
        "shared_preload_libraries session_preload_libraries local_preload_libraries dynamic_library_path"
        " jit_provider extension_destdir extension_control_path output_plugin_libraries oauth_validator_libraries",
    ),
    _refusal(
        "it concerns the network, connections or authentication, which benchlab sets up itself",
        "ssl password_encryption authentication_timeout db_user_namespace scram_iterations gss_accept_delegation"
        " bonjour bonjour_name client_connection_check_interval primary_conninfo primary_slot_name",
        prefixes=("ssl_", "krb_", "tcp_", "unix_socket_"),
    ),
    _refusal(
        "it names files or directories on the host",
        "config_file external_pid_file stats_temp_directory promote_trigger_file",
    ),
    _refusal(
        "it puts data in tablespaces, directories outside the storage under test",
        "temp_tablespaces default_tablespace",
    ),
)


def refusal(name: str) -> str | None:
    """Why benchlab never writes `name` into postgresql.conf; None for a name not refused by rule."""
    if name in RESERVED_SETTINGS:
        return f"{name} is set by benchlab itself"
    if name in INCLUDE_DIRECTIVES:
        return f"{name} cannot be set from benchlab: it is a directive that reads another file on the host"
    if "." in name:
        return (
            f"{name} cannot be set from benchlab: a name with a dot is an extension's or a custom setting,"
            " and benchlab loads no extensions"
        )
    for rule in REFUSED:
        if rule.covers(name):
            return f"{name} cannot be set from benchlab: {rule.reason}"
    return None


def check_setting(key: str, value: str) -> None:
    """Refuse a setting benchlab must not write into postgresql.conf, or a value PostgreSQL would refuse."""
    if not SETTING_NAME.fullmatch(key):
        raise InvalidOption(f"{key!r} is not a PostgreSQL setting name")
    reason = refusal(key)
    if reason:
        raise InvalidOption(reason)
    setting = ALLOWED.get(key)
    if setting is None:
        raise InvalidOption(f"{key} is not on benchlab's list of settings a benchmark may change ({', '.join(GROUPS)})")
    if any(ch in value for ch in "\n\r\0"):
        raise InvalidOption(f"the value of {key} spans lines")
    setting.check(value)
