"""How much room `sysbench <test> prepare` needs: its tables times their rows, as
runs/lab/pgbench/scale_room.py says it for `pgbench -i`. Pure: no Django, no I/O.

A sysbench OLTP table (oltp_common.lua: id serial, k integer, c char(120), pad char(60), its primary
key and the k_N index) takes 256 bytes a row with its indexes in PostgreSQL, as measured on a real
load (BYTES_PER_SYSBENCH_ROW in runs/lab/sysbench/options.py says how). Loading writes the rows to the
WAL as pgbench's COPY does, so the WAL while loading is counted as for pgbench.
"""

from runs.lab.pgbench.scale_room import CLUSTER_BYTES, DEFAULT_MAX_WAL_BYTES, ScaleNeed
from runs.lab.sysbench.options import BYTES_PER_SYSBENCH_ROW


def sysbench_need(tables: int, table_size: int, max_wal_bytes: int = DEFAULT_MAX_WAL_BYTES) -> ScaleNeed:
    """The room `sysbench prepare --tables=N --table-size=M` needs: its data, the WAL written while
    loading (as much as the data, until max_wal_size makes checkpoints recycle it), the empty cluster."""
    data = tables * table_size * BYTES_PER_SYSBENCH_ROW
    return ScaleNeed(scale=0, data_bytes=data, wal_bytes=min(data, max_wal_bytes), cluster_bytes=CLUSTER_BYTES)


def largest_fitting_table_size(tables: int, room_bytes: int, max_wal_bytes: int = DEFAULT_MAX_WAL_BYTES) -> int:
    """The most rows a table of `tables` may have for the load to fit in `room_bytes`; 0 if none."""
    low, high = 0, 10**12
    while low < high:  # the need grows with the rows: bisect for the last size that fits
        middle = (low + high + 1) // 2
        if sysbench_need(tables, middle, max_wal_bytes).total_bytes <= room_bytes:
            low = middle
        else:
            high = middle - 1
    return low
