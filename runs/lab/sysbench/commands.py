"""sysbench command lines: loading its tables (`sysbench <test> prepare`) and measuring (`run`),
against the throw-away cluster through sysbench's pgsql driver. Like pgbench's, they run
detached on the host, followed by byte offset; sysbench writes everything to stdout.

sysbench 1.0 has no --warmup-time (1.1 does): a warm-up is a report checkpoint at its end
(--report-checkpoints), which prints the statistics so far and resets every counter, the
histogram's too, so the final summary and histogram are the measured window's alone.
Prepared statements (--db-ps-mode auto, the default) work with PostgreSQL 15's libpq here.
"""

from runs.lab.errors import InvalidOption
from runs.lab.pgbench.commands import DATABASE_NAME, Connection
from runs.lab.sysbench.options import SysbenchOptions

SYSBENCH = "sysbench"  # Debian's package puts it on the PATH, its Lua tests in /usr/share/sysbench
PERCENTILE = 95  # the latency percentile of each report line and of the summary


def _common(connection: Connection, options: SysbenchOptions) -> list[str]:
    options.validate()
    if not DATABASE_NAME.fullmatch(connection.database) or not DATABASE_NAME.fullmatch(connection.user):
        raise InvalidOption(f"bad database or role name {connection.database!r}, {connection.user!r}")
    return [
        SYSBENCH,
        options.test,
        "--db-driver=pgsql",
        f"--pgsql-host={connection.host}",
        f"--pgsql-port={connection.port}",
        f"--pgsql-user={connection.user}",
        f"--pgsql-db={connection.database}",
        f"--tables={options.tables}",
        f"--table-size={options.table_size}",
    ]


def prepare_command(connection: Connection, options: SysbenchOptions) -> list[str]:
    """The tables created and filled (what `pgbench -i` is to pgbench)."""
    return [*_common(connection, options), "prepare"]


def run_command(connection: Connection, options: SysbenchOptions) -> list[str]:
    """The measurement: warm-up and measured window in one run, a report line a second, the
    latency histogram at the end."""
    argv = [*_common(connection, options), f"--threads={options.threads}"]
    argv.append(f"--time={options.warmup_s + options.duration_s}")
    if options.warmup_s:
        argv.append(f"--report-checkpoints={options.warmup_s}")
    if options.rate_tps is not None:
        argv.append(f"--rate={options.rate_tps}")
    if options.random_seed is not None:
        argv.append(f"--rand-seed={options.random_seed}")
    argv += ["--report-interval=1", "--histogram=on", f"--percentile={PERCENTILE}", "run"]
    return argv


def version_command() -> list[str]:
    return [SYSBENCH, "--version"]
