"""From a queued Run to what the lab layer needs to run it (runs/lab never reads the database)."""

from django.conf import settings

from runs.bench.specs import init_options
from runs.lab.benchmark.run import BenchmarkSpec, ClientSpec
from runs.lab.options import StateBefore, parse_mkfs_options, parse_mount_options
from runs.lab.pgbench.commands import RunOptions
from runs.lab.postgres.cluster import parse_settings
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.prepare import FilesystemSpec
from runs.lab.sysbench.options import SysbenchOptions
from runs.models import Driver, Run, Workload
from runs.models.inventory import benchlab_data_dirs
from runs.models.run_clients import client_database, client_pgbench_install


def client_specs(run: Run) -> tuple[ClientSpec, ...]:
    """Each client host of the run, in order: its pgbench, its address, and its database."""
    hosts = run.client_host_list
    specs = []
    for position, client in enumerate(hosts, start=1):
        install = client_pgbench_install(run.pg_install, client)
        if install is None:
            raise ValueError(f"{client} has no PostgreSQL install with pgbench in the inventory")
        specs.append(
            ClientSpec(
                pg_bin_dir=install.bin_dir,
                address=client.address,
                server_address=run.server_host.address,
                name=client.name,
                database=client_database(position, len(hosts), run.shared_database),
            )
        )
    return tuple(specs)


def benchmark_spec(run: Run) -> BenchmarkSpec:
    """The lab layer's view of a run (the lab layer never reads the database)."""
    device = run.device
    custom = run.workload == Workload.CUSTOM
    sysbench = run.driver == Driver.SYSBENCH
    return BenchmarkSpec(
        device=DeviceIdentity(
            path=device.path,
            wipe_allowed=device.wipe_allowed,
            serial=device.serial,
            size_bytes=device.capacity_bytes,
            protected_dirs=benchlab_data_dirs(),
        ),
        filesystem=FilesystemSpec(
            fstype=run.filesystem,
            mkfs_options=parse_mkfs_options(run.filesystem, run.mkfs_options) if run.mkfs_options else (),
            mount_options=parse_mount_options(run.filesystem, run.mount_options),
        ),
        pg_bin_dir=run.pg_install.bin_dir,
        pg_settings=parse_settings(run.pg_settings),
        init=init_options(run),
        run=RunOptions(  # a sysbench run's duration and clients are read from it too
            builtin=None if custom or sysbench else run.workload,
            custom_script=run.custom_script if custom else None,
            clients=run.clients,
            threads=run.threads,
            duration_s=run.warmup_s + run.duration_s,  # one pgbench run; the warm-up is cut off afterwards
            query_mode=run.query_mode,
            rate_tps=run.rate_limit_tps,
            log_sampling_rate=run.log_sampling_rate,
            latency_limit_ms=run.latency_limit_ms,
            random_seed=run.random_seed,
        ),
        state=StateBefore(
            cache=run.cache_state,
            data=run.data_state,
            checkpoint=run.checkpoint_before,
            settle_s=float(run.settle_s),
        ),
        run_key=run.run_key,
        clients=client_specs(run),
        warmup_s=run.warmup_s,
        warmup_run_s=run.warmup_run_s,
        warmup_run_clients=run.warmup_run_clients,
        unreachable_limit_s=settings.BENCHLAB_HOST_UNREACHABLE_S,
        driver=run.driver,
        sysbench=sysbench_options(run) if sysbench else None,
    )


def sysbench_options(run: Run) -> SysbenchOptions:
    """A sysbench run's test, tables and measurement (its warm-up: a report checkpoint, commands.py)."""
    return SysbenchOptions(
        test=run.workload,
        tables=run.sysbench_tables,
        table_size=run.sysbench_table_size,
        threads=run.clients,
        duration_s=run.duration_s,
        warmup_s=run.warmup_s,
        rate_tps=round(run.rate_limit_tps) if run.rate_limit_tps is not None else None,
        random_seed=run.random_seed,
    )
