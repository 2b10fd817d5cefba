"""OS and PostgreSQL metrics around a measurement.

iostat (for the device under test) and vmstat run detached beside pgbench, one line a
second, into the run directory; pg_stat_database and pg_stat_bgwriter (pg_stat_checkpointer
from PostgreSQL 17) are read before and after, and the difference gives cache hit ratio,
checkpoints and buffers written.
"""

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from runs.lab.errors import InvalidOption
from runs.lab.parse.sysstat import IostatSample, VmstatSample, parse_iostat, parse_vmstat
from runs.lab.pgbench.commands import DATABASE_NAME
from runs.lab.postgres.cluster import Cluster, psql
from runs.lab.transport.interface import Transport
from runs.lab.transport.process import Detached, cancel, start_detached


@dataclass
class OsMetrics:
    iostat: list[IostatSample] = field(default_factory=list)
    vmstat: list[VmstatSample] = field(default_factory=list)
    iostat_text: str = ""
    vmstat_text: str = ""


def iostat_device(transport: Transport, device_node: str | None, mountpoint: str) -> str | None:
    """The kernel name iostat knows the storage under test by (loop3, nvme0n1, …); None for tmpfs."""
    node = device_node
    if node is None:
        source = transport.run(["findmnt", "-n", "-o", "SOURCE", "--target", mountpoint], check=False).stdout.strip()
        source = source.split("[", 1)[0]  # a bind mount shows as /dev/vda1[/path/inside]
        if not source.startswith("/dev/"):
            return None
        node = transport.run(["readlink", "-f", source]).stdout.strip()
    return node.rsplit("/", 1)[-1]


# The collectors os_metrics starts, detached in the run directory (their files: <name>.pid, .stdout, .exit).
COLLECTORS = ("iostat", "vmstat")


def collectors_for(device: str | None) -> tuple[str, ...]:
    """The collectors os_metrics starts: iostat only for a device it knows by name."""
    return COLLECTORS if device is not None else tuple(name for name in COLLECTORS if name != "iostat")


@contextmanager
def os_metrics(transport: Transport, run_dir: str, device: str | None, max_seconds: int) -> Iterator[OsMetrics]:
    """iostat and vmstat every second while the block runs; parsed when it ends.

    Both stop by themselves after max_seconds, so a worker that dies mid-run leaves nothing
    running for ever.
    """
    metrics = OsMetrics()
    processes: list[Detached] = []
    count = str(max(max_seconds, 1))
    try:
        if device is not None:
            iostat = ["env", "S_TIME_FORMAT=ISO", "iostat", "-dxyt", device, "1", count]
            processes.append(start_detached(transport, iostat, run_dir, "iostat"))
        vmstat = ["env", "TZ=UTC", "vmstat", "-nt", "1", count]
        processes.append(start_detached(transport, vmstat, run_dir, "vmstat"))
        yield metrics
    finally:
        for process in processes:
            cancel(transport, process, grace_s=2.0)
        read = read_os_metrics(transport, run_dir, device)
        metrics.iostat, metrics.iostat_text = read.iostat, read.iostat_text
        metrics.vmstat, metrics.vmstat_text = read.vmstat, read.vmstat_text


def read_os_metrics(transport: Transport, run_dir: str, device: str | None) -> OsMetrics:
    """What iostat (of `device`) and vmstat wrote in the run directory, parsed."""
    metrics = OsMetrics()
    if device is not None:
        metrics.iostat_text = transport.run(["cat", f"{run_dir}/iostat.stdout"], check=False).stdout
        metrics.iostat = [s for s in parse_iostat(metrics.iostat_text) if s.device == device]
    metrics.vmstat_text = transport.run(["cat", f"{run_dir}/vmstat.stdout"], check=False).stdout
    metrics.vmstat = parse_vmstat(metrics.vmstat_text, skip_since_boot=True)
    return metrics


@dataclass(frozen=True)
class PgStatsSnapshot:
    database: dict[str, object]
    bgwriter: dict[str, object]


# PostgreSQL 17 moved the checkpointer's counters out of pg_stat_bgwriter into pg_stat_checkpointer,
# under other names. They are read from the view the server has (a query naming the other one fails)
# and kept under pg_stat_bgwriter's names, with the view they came from: the statistics delta, the
# resume record and the stored metrics keep one shape for every version.
CHECKPOINTER_VIEW_SINCE = 170000  # server_version_num
BGWRITER_VIEW = "pg_stat_bgwriter"
CHECKPOINTER_VIEW = "pg_stat_checkpointer"
_BGWRITER_ROW = "(SELECT row_to_json(b) FROM pg_stat_bgwriter b)"
_BGWRITER_AND_CHECKPOINTER_ROW = f"""(SELECT to_jsonb(b) || jsonb_build_object('checkpoints_timed', c.num_timed,
    'checkpoints_req', c.num_requested, 'buffers_checkpoint', c.buffers_written, 'checkpoints_from',
    '{CHECKPOINTER_VIEW}') FROM pg_stat_bgwriter b, pg_stat_checkpointer c)"""  # noqa: S608 - constants only


def checkpointer_row_sql(server_version_num: int) -> str:
    """The subquery that reads the checkpointer's counters on a server of that version."""
    return _BGWRITER_AND_CHECKPOINTER_ROW if server_version_num >= CHECKPOINTER_VIEW_SINCE else _BGWRITER_ROW


def database_list_sql(database: str | Sequence[str]) -> str:
    """The run's database names as an SQL list ("'bench', 'bench_2'"), each checked against
    DATABASE_NAME first: psql -c takes no bind parameters."""
    names = [database] if isinstance(database, str) else list(database)
    for name in names:
        if not DATABASE_NAME.fullmatch(name):
            raise InvalidOption(f"bad database name {name!r}")
    return ", ".join(f"'{name}'" for name in names)


def pg_stats_snapshot(transport: Transport, cluster: Cluster, database: str | Sequence[str]) -> PgStatsSnapshot:
    """pg_stat_database's row of the run's database (several databases: their counters summed,
    one per client host) and pg_stat_bgwriter's (with pg_stat_checkpointer's on PostgreSQL 17+)."""
    listed = database_list_sql(database)
    version = int(psql(transport, cluster, "SHOW server_version_num"))
    sql = f"""SELECT json_build_object(
        'databases', (SELECT json_agg(row_to_json(d)) FROM pg_stat_database d WHERE datname IN ({listed})),
        'bgwriter', {checkpointer_row_sql(version)})"""  # noqa: S608
    data = json.loads(psql(transport, cluster, sql))
    rows = data["databases"] or []
    return PgStatsSnapshot(database=_summed(rows) if len(rows) > 1 else (rows[0] if rows else {}),
                           bgwriter=data["bgwriter"] or {})  # fmt: skip


def _summed(rows: list[dict[str, object]]) -> dict[str, object]:
    """Several databases' counters as one row: whole numbers added, anything else dropped. A
    column is whole in every row or left out: JSON prints a float8 that happens to be whole
    (session_time 0) as an integer, in one row and not in the next."""

    def whole(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    keys = [key for key in rows[0] if key != "datid" and all(whole(row.get(key, 0)) for row in rows)]
    return {key: sum(int(str(row.get(key) or 0)) for row in rows) for key in keys}


def _delta(before: dict[str, object], after: dict[str, object], key: str) -> int:
    return int(str(after.get(key) or 0)) - int(str(before.get(key) or 0))


@dataclass(frozen=True)
class PgStatsDelta:
    blocks_hit: int
    blocks_read: int
    transactions_committed: int
    transactions_rolled_back: int
    checkpoints_timed: int
    checkpoints_requested: int
    buffers_checkpoint: int
    buffers_clean: int
    buffers_backend: int
    buffers_backend_fsync: int
    checkpoints_source: str = BGWRITER_VIEW  # the view the checkpoint counters came from

    @property
    def cache_hit_ratio(self) -> float | None:
        total = self.blocks_hit + self.blocks_read
        return self.blocks_hit / total if total else None

    @property
    def checkpoints(self) -> int:
        return self.checkpoints_timed + self.checkpoints_requested

    @property
    def buffers_written(self) -> int:
        return self.buffers_checkpoint + self.buffers_clean + self.buffers_backend


def pg_stats_delta(before: PgStatsSnapshot, after: PgStatsSnapshot) -> PgStatsDelta:
    db_before, db_after = before.database, after.database
    bg_before, bg_after = before.bgwriter, after.bgwriter
    return PgStatsDelta(
        blocks_hit=_delta(db_before, db_after, "blks_hit"),
        blocks_read=_delta(db_before, db_after, "blks_read"),
        transactions_committed=_delta(db_before, db_after, "xact_commit"),
        transactions_rolled_back=_delta(db_before, db_after, "xact_rollback"),
        checkpoints_timed=_delta(bg_before, bg_after, "checkpoints_timed"),
        checkpoints_requested=_delta(bg_before, bg_after, "checkpoints_req"),
        buffers_checkpoint=_delta(bg_before, bg_after, "buffers_checkpoint"),
        buffers_clean=_delta(bg_before, bg_after, "buffers_clean"),
        buffers_backend=_delta(bg_before, bg_after, "buffers_backend"),
        buffers_backend_fsync=_delta(bg_before, bg_after, "buffers_backend_fsync"),
        checkpoints_source=str(bg_after.get("checkpoints_from") or BGWRITER_VIEW),
    )
