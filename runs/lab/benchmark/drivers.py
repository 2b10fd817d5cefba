"""The programs that load and measure (pgbench, sysbench): one interface, one registry.

Everything else of a run is the driver's neighbours' and the same for all: the storage, the
throw-away cluster, the state before measuring, iostat and vmstat, checkpoints, the method's
readings, the resume record, cancel and cleanup. What differs is here: how the database is
loaded, the measurement's command line, which of its outputs carries the per-second report and
how a line of it reads, and what its outputs turn into once it has exited. A third driver is a
class with these members, registered in DRIVERS (ARCHITECTURE.md, "Adding a driver").
"""

from typing import TYPE_CHECKING, ClassVar, Protocol

from runs.lab.benchmark.clients import client_pgbench_version
from runs.lab.benchmark.collect import Measured, collect_pgbench_outputs
from runs.lab.benchmark.results import BenchmarkResult, SysbenchReport
from runs.lab.errors import LabError
from runs.lab.host.run_user import read_as_run_user, run_as_run_user
from runs.lab.parse.pgbench import ProgressSample, parse_progress_line
from runs.lab.parse.sysbench import histogram_percentile, parse_histogram, parse_report_line, parse_summary
from runs.lab.pgbench.commands import Connection, init_command
from runs.lab.pgbench.commands import run_command as pgbench_run_command
from runs.lab.pgbench.latency import LatencyPercentiles
from runs.lab.sysbench import commands as sysbench_commands
from runs.lab.sysbench.options import SysbenchOptions
from runs.lab.transport.interface import Transport

if TYPE_CHECKING:  # spec.py's BenchmarkSpec names the driver; this module reads it
    from runs.lab.benchmark.spec import BenchmarkSpec


class Driver(Protocol):
    name: ClassVar[str]  # the process's and the log's name; Run.driver's value
    progress_stream: ClassVar[str]  # "stdout" or "stderr": where the per-second report goes

    def validate(self, spec: "BenchmarkSpec") -> None:
        """InvalidOption if the driver's options are wrong: before the run touches a host."""

    def check_host(self, transport: Transport, spec: "BenchmarkSpec") -> None:
        """LabError if the host cannot run the driver: called before the storage is touched."""

    def load_command(self, spec: "BenchmarkSpec", connection: Connection) -> list[str]:
        """Fill the (created, empty) database: run detached and followed as the run user."""

    def load_doing(self, spec: "BenchmarkSpec") -> str:
        """What loading is, in a storage failure's words ("loading scale 10 with pgbench -i")."""

    def measure_command(
        self, spec: "BenchmarkSpec", bin_dir: str, connection: Connection, work_dir: str, script: str | None
    ) -> list[str]: ...

    def version(self, transport: Transport, bin_dir: str) -> str: ...

    def progress(self, line: str) -> ProgressSample | None:
        """A second of the live series from one line of progress_stream, or None."""

    def collect_outputs(self, result: BenchmarkResult, measured: Measured) -> None:
        """Once the measurement has exited: its outputs read into the result."""


class Pgbench:
    name: ClassVar[str] = "pgbench"
    progress_stream: ClassVar[str] = "stderr"

    def validate(self, spec: "BenchmarkSpec") -> None:
        spec.init.validate()
        spec.run.validate()

    def check_host(self, transport: Transport, spec: "BenchmarkSpec") -> None:
        pass  # the install's programs are checked by the service before the run (bench.services.installs)

    def load_command(self, spec: "BenchmarkSpec", connection: Connection) -> list[str]:
        return init_command(spec.pg_bin_dir, connection, spec.init)

    def load_doing(self, spec: "BenchmarkSpec") -> str:
        return f"loading scale {spec.init.scale} with pgbench -i"

    def measure_command(
        self, spec: "BenchmarkSpec", bin_dir: str, connection: Connection, work_dir: str, script: str | None
    ) -> list[str]:
        return pgbench_run_command(bin_dir, connection, spec.run, work_dir, script)

    def version(self, transport: Transport, bin_dir: str) -> str:
        return client_pgbench_version(transport, bin_dir)

    def progress(self, line: str) -> ProgressSample | None:
        return parse_progress_line(line)

    def collect_outputs(self, result: BenchmarkResult, measured: Measured) -> None:
        collect_pgbench_outputs(result, measured)


class Sysbench:
    name: ClassVar[str] = "sysbench"
    progress_stream: ClassVar[str] = "stdout"

    def validate(self, spec: "BenchmarkSpec") -> None:
        _options(spec).validate()

    def check_host(self, transport: Transport, spec: "BenchmarkSpec") -> None:
        found = transport.run(["sh", "-c", f"command -v {sysbench_commands.SYSBENCH}"], check=False)
        if found.exit_status != 0:
            raise LabError(f"sysbench is not installed on {transport.label}: install Debian's package sysbench")
        if spec.clients:
            raise LabError("sysbench runs on the server only: a sysbench run cannot have client hosts")

    def load_command(self, spec: "BenchmarkSpec", connection: Connection) -> list[str]:
        return sysbench_commands.prepare_command(connection, _options(spec))

    def load_doing(self, spec: "BenchmarkSpec") -> str:
        options = _options(spec)
        return f"loading {options.tables} tables of {options.table_size} rows with sysbench prepare"

    def measure_command(
        self, spec: "BenchmarkSpec", bin_dir: str, connection: Connection, work_dir: str, script: str | None
    ) -> list[str]:
        return sysbench_commands.run_command(connection, _options(spec))

    def version(self, transport: Transport, bin_dir: str) -> str:
        return run_as_run_user(transport, sysbench_commands.version_command()).stdout.strip()

    def progress(self, line: str) -> ProgressSample | None:
        second = parse_report_line(line)
        return second.as_sample() if second is not None else None

    def collect_outputs(self, result: BenchmarkResult, measured: Measured) -> None:
        process = measured.process
        result.stdout = read_as_run_user(measured.bench, process.path("stdout"))
        result.stderr = read_as_run_user(measured.bench, process.path("stderr"))
        summary, histogram = parse_summary(result.stdout), parse_histogram(result.stdout)
        result.sysbench = SysbenchReport(summary, histogram)
        if summary is None:
            return
        most = summary.latency_max_ms
        percentiles = {p: histogram_percentile(histogram, p, at_most=most) for p in (50, 90, 95, 99, 99.9)}
        result.latency = LatencyPercentiles(
            count=summary.transactions,
            sampling_rate=1.0,
            mean_ms=summary.latency_avg_ms,
            min_ms=summary.latency_min_ms,
            p50_ms=percentiles[50],
            p90_ms=percentiles[90],
            p95_ms=percentiles[95],
            p99_ms=percentiles[99],
            p999_ms=percentiles[99.9],
            max_ms=summary.latency_max_ms,
            skipped=0,
            failed=summary.errors,
        )


def _options(spec: "BenchmarkSpec") -> SysbenchOptions:
    if spec.sysbench is None:
        raise ValueError("a sysbench run needs its sysbench options")
    return spec.sysbench


DRIVERS: dict[str, Driver] = {driver.name: driver for driver in (Pgbench(), Sysbench())}


def driver_for(name: str) -> Driver:
    try:
        return DRIVERS[name]
    except KeyError:
        raise ValueError(f"driver {name!r} is not one of {', '.join(DRIVERS)}") from None
