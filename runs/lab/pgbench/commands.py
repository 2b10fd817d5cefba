"""pgbench command lines: creating the database, loading it (`pgbench -i`), measuring. They run
detached on the host (lab.transport.process), followed by byte offset (lab.pgbench.follow).
"""

import re
from dataclasses import dataclass

from runs.lab.errors import InvalidOption
from runs.lab.options import BUILTIN_SCRIPTS as BUILTIN_SCRIPTS  # re-exported: checked without a host
from runs.lab.options import QUERY_MODES as QUERY_MODES
from runs.lab.options import InitOptions as InitOptions
from runs.lab.options import RunOptions as RunOptions

DATABASE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
LOG_PREFIX = "pgbench_log"  # pgbench adds .<pid>[.<thread>]


@dataclass(frozen=True)
class Connection:
    """Where pgbench connects: a unix-socket directory or an address, a port, a database."""

    host: str
    port: int
    database: str = "bench"
    user: str = "postgres"

    def args(self) -> list[str]:
        if not DATABASE_NAME.fullmatch(self.database):
            raise InvalidOption(f"bad database name {self.database!r}")
        return ["-h", self.host, "-p", str(self.port), "-U", self.user]


def create_database_command(bin_dir: str, connection: Connection, owner: str) -> list[str]:
    if not DATABASE_NAME.fullmatch(owner):
        raise InvalidOption(f"bad role name {owner!r}")
    return [f"{bin_dir}/createdb", *connection.args(), "-O", owner, connection.database]


def init_command(bin_dir: str, connection: Connection, options: InitOptions) -> list[str]:
    options.validate()
    argv = [f"{bin_dir}/pgbench", "-i", "-s", str(options.scale), *options.args()]
    return [*argv, *connection.args(), connection.database]


def run_command(
    bin_dir: str, connection: Connection, options: RunOptions, run_dir: str, script_path: str | None = None
) -> list[str]:
    """The measurement's command line: per-second progress, and aggregate or per-transaction logs into run_dir."""
    options.validate()
    argv = [f"{bin_dir}/pgbench", *connection.args()]
    if options.builtin is not None:
        argv += ["-b", options.builtin]
    else:
        if script_path is None:
            raise InvalidOption("a custom script needs its path on the host")
        argv += ["-f", script_path]
    argv += ["-c", str(options.clients), "-j", str(options.threads), "-M", options.query_mode]
    argv += ["-T", str(options.duration_s)]
    if options.rate_tps is not None:
        argv += ["-R", f"{options.rate_tps:g}"]
    if options.latency_limit_ms is not None:
        argv.append(f"--latency-limit={options.latency_limit_ms:g}")
    argv.append("--progress=1")
    if options.random_seed is not None:
        argv.append(f"--random-seed={options.random_seed}")
    if options.log_sampling_rate is None:
        argv.append("--aggregate-interval=1")
    elif options.log_sampling_rate < 1:
        argv.append(f"--sampling-rate={options.log_sampling_rate:g}")
    argv += ["-l", f"--log-prefix={run_dir}/{LOG_PREFIX}"]
    return [*argv, connection.database]


# ---- detached execution -------------------------------------------------------------------
