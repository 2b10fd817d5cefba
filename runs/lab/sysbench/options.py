"""sysbench's options, checked without a machine, as runs/lab/pgbench/options.py checks pgbench's.

A sysbench run is one of its bundled OLTP tests (Lua scripts under /usr/share/sysbench) against
`tables` tables of `table_size` rows each, which `sysbench <test> prepare` creates and fills. The
queue form, the API and campaigns check a run with these values before a host is touched, and the
command lines are built from the same values.
"""

from dataclasses import dataclass

from runs.lab.errors import InvalidOption

# The OLTP tests benchlab offers: what each does is sysbench's (oltp_common.lua and the test's file).
SYSBENCH_TESTS = (
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_insert",
)
MAX_TABLES = 1000
MAX_TABLE_SIZE = 1_000_000_000  # rows per table: ~256 GB a table, far beyond a lab's disks
MAX_RATE_TPS = 1_000_000  # sysbench --rate takes whole transactions per second
# A row of sbtest with its primary key and secondary index on PostgreSQL 15: 2 tables of 100,000 rows
# made pg_database_size grow by 51,166,052 bytes (256 a row; sysbench 1.0.20, 27 Nov 2026).
BYTES_PER_SYSBENCH_ROW = 256


@dataclass(frozen=True)
class SysbenchOptions:
    """One sysbench run: the test, its tables, and how it is measured."""

    test: str
    tables: int = 1
    table_size: int = 10_000
    threads: int = 1  # sysbench's --threads: the number of concurrent connections (pgbench's clients)
    duration_s: int = 60
    warmup_s: int = 0  # --warmup-time: run, then statistics reset, before the measured duration
    rate_tps: int | None = None  # --rate; None: as fast as it goes
    random_seed: int | None = None  # --rand-seed; sysbench's 0 means "from the clock", so None is left out

    def validate(self) -> None:
        if self.test not in SYSBENCH_TESTS:
            raise InvalidOption(f"sysbench test {self.test!r} is not one of {', '.join(SYSBENCH_TESTS)}")
        _within("sysbench tables", self.tables, 1, MAX_TABLES)
        _within("sysbench table size (rows)", self.table_size, 1, MAX_TABLE_SIZE)
        _within("clients (sysbench threads)", self.threads, 1, 10_000)
        _within("duration (s)", self.duration_s, 1, 7 * 24 * 3600)
        _within("warm-up (s)", self.warmup_s, 0, 7 * 24 * 3600)
        if self.rate_tps is not None:
            _within("rate limit (tps) for sysbench", self.rate_tps, 1, MAX_RATE_TPS)
        if self.random_seed is not None:
            # sysbench reads --rand-seed as a C int; 0 would mean "seed from the clock".
            _within("random seed for sysbench", self.random_seed, 1, 2**31 - 1)


def _within(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidOption(f"{name} must be a whole number from {low:,} to {high:,}, not {value!r}")
