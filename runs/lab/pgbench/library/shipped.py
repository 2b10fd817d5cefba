"""The scripts benchlab ships in its workload library: each one's name, version, title, what it
models, its parameters, and its text (the .pgbench file of the same name beside this module).

This list is the one source: runs/bench/services/workload_library.py writes a row for each
(name, version) the database lacks. A shipped version is never edited: a changed script is a new
entry with the next version (and its file `<name>.v<version>.pgbench`), so runs keep meaning what
they ran.
"""

from dataclasses import dataclass
from pathlib import Path

from runs.lab.pgbench.library import Parameter

HERE = Path(__file__).parent


@dataclass(frozen=True)
class ShippedScript:
    name: str
    version: int
    title: str
    description: str
    parameters: tuple[Parameter, ...] = ()

    @property
    def script(self) -> str:
        suffix = "" if self.version == 1 else f".v{self.version}"
        return (HERE / f"{self.name}{suffix}.pgbench").read_text()


SKEW_NOTE = (
    " Over pgbench's own tables (pgbench -i). The skew is pgbench's parameter of the distribution: "
    "compare runs of one distribution at several skews, not a zipfian skew with an exponential one."
)
TPCC_LIKE = (
    "A mix of five transactions in TPC-C's proportions (new-order 45%, payment 43%, order-status, "
    "delivery and stock-level 4% each) written for pgbench's own tables: a branch stands for a warehouse, "
    "its 10 tellers for its districts, an account for a customer and an item's stock, pgbench_history for "
    "orders and order lines. Use it for a contended read/write mix with multi-row transactions. "
    "It is TPC-C-like, not TPC-C: it has none of TPC-C's schema (nine tables), terminals, keying and think "
    "times, its measured response-time limits or its audit. Its results are transactions per second of "
    "this script, not tpmC, and must not be compared with published TPC-C results (the TPC's fair-use "
    "policy allows the name TPC-C only for audited results)."
)

SHIPPED: tuple[ShippedScript, ...] = (
    ShippedScript(
        name="read-mostly",
        version=1,
        title="Read-mostly (90/10)",
        description="Most transactions read one account by its primary key; the others are pgbench's "
        "TPC-B-like update. A web application's or a cache's back end: reads dominate, writes keep "
        "the buffers dirty. Over pgbench's own tables (pgbench -i).",
        parameters=(Parameter("read_percent", "reads (%)", 0, 100, 90, integer=True),),
    ),
    ShippedScript(
        name="write-heavy",
        version=1,
        title="Write-heavy",
        description="No reads: each transaction updates a run of consecutive accounts and a teller and "
        "appends a history row, without tpcb-like's branch update (whose few rows make clients queue on "
        "locks rather than on the storage). For the WAL, checkpoints and the device's writes. Over "
        "pgbench's own tables (pgbench -i).",
        parameters=(Parameter("accounts", "accounts updated per transaction", 1, 100, 4, integer=True),),
    ),
    ShippedScript(
        name="skewed-zipfian",
        version=1,
        title="Skewed updates (zipfian)",
        description=" ".join(
            (
                "pgbench's TPC-B-like account update with the account drawn by random_zipfian: a few hot accounts "
                "take most updates. For hot rows: lock waits, HOT updates, a small working set in a large table.",
                SKEW_NOTE.strip(),
            )
        ),
        parameters=(Parameter("skew", "skew (zipfian parameter)", 1.001, 1000, 1.1),),
    ),
    ShippedScript(
        name="skewed-exponential",
        version=1,
        title="Skewed updates (exponential)",
        description="pgbench's TPC-B-like account update with the account drawn by random_exponential: the "
        "first accounts take most updates, the more so the higher the skew. A gentler skew than zipfian's "
        "for the same hot-row questions. " + SKEW_NOTE.strip(),
        parameters=(Parameter("skew", "skew (exponential parameter)", 0.001, 1000, 5),),
    ),
    ShippedScript(
        name="insert-only",
        version=1,
        title="Insert-only (append)",
        description="Each transaction appends rows to pgbench_history and touches nothing else, as a "
        "logging or event table grows: the table's last page, its extension and the WAL. Over pgbench's "
        "own tables (pgbench -i).",
        parameters=(Parameter("rows", "rows per transaction", 1, 1000, 1, integer=True),),
    ),
    ShippedScript(
        name="tpcc-like",
        version=1,
        title="TPC-C-like mix (not TPC-C)",
        description=TPCC_LIKE,
        parameters=(Parameter("max_lines", "most order lines per new order", 5, 50, 15, integer=True),),
    ),
)
