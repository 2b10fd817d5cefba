"""Whether a run specification may be queued: spec_errors(), every problem with a RunSpec keyed
by the form field it belongs to, against the inventory as loaded once (Inventory).

The rules of single fields come from the Run model (runs/bench/specs.py reads them); the rules that
span fields and rows are here: the hosts and the device exist and belong together, each client
host can reach the server with a pgbench that fits, the filesystem and its options suit the
device, the data fits on it, the workload is complete. Options are checked by the lab layer's
pure module (runs.lab.options), the very functions that apply them on the host; nothing here
touches a lab machine.
"""

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from runs.bench.driver_checks import driver_problems
from runs.bench.spec_library import library_script_text
from runs.bench.specs import (
    CLIENT_FIELD,
    FORM_FIELDS,
    MODEL_FIELDS,
    NUMBER_FIELDS,
    RunSpec,
    init_options,
    range_problem,
)
from runs.common.units import binary_size
from runs.lab.errors import InvalidOption
from runs.lab.options import (
    RunOptions,
    check_init_steps,
    hba_address,
    parse_mkfs_options,
    parse_mount_options,
    parse_settings,
)
from runs.lab.pgbench.scale_room import (
    DEFAULT_MAX_WAL_BYTES,
    FORMATTED_SHARE,
    largest_fitting_scale,
    max_wal_bytes,
    scale_need,
    tmpfs_room,
)
from runs.lab.sysbench.data_size import largest_fitting_table_size, sysbench_need
from runs.models import MAX_CLIENT_HOSTS, Device, Driver, Filesystem, Host, PgInstall, Workload, WorkloadScript
from runs.models.run_clients import client_pgbench_install


@dataclass(frozen=True)
class Inventory:
    """The hosts, devices and installs a validation looks at, by id, loaded once: validating a
    hundred specs costs three queries."""

    hosts: Mapping[int, Host]
    devices: Mapping[int, Device]
    installs: Mapping[int, PgInstall]

    @classmethod
    def load(cls) -> "Inventory":
        return cls(
            # With their installs: a client host's pgbench is chosen among them (client_pgbench_install).
            hosts={host.pk: host for host in Host.objects.prefetch_related("pg_installs")},
            # Their str() names the host: the messages use it.
            devices={device.pk: device for device in Device.objects.select_related("host")},
            installs={install.pk: install for install in PgInstall.objects.select_related("host")},
        )

    @cached_property
    def scripts(self) -> Mapping[int, WorkloadScript]:
        """The workload library, every version: read once, and only for a spec that names one."""
        return WorkloadScript.objects.in_bulk()


_ROWS = {
    "server_host_id": "hosts",
    "device_id": "devices",
    "pg_install_id": "installs",
    "library_script_id": "scripts",
}


_ROW_NAMES = {"hosts": Host, "devices": Device, "installs": PgInstall, "scripts": WorkloadScript}


class _Problems:
    def __init__(self) -> None:
        self.by_field: dict[str, list[str]] = {}

    def add(self, field: str, message: str) -> None:
        messages = self.by_field.setdefault(field, [])
        if message not in messages:  # several client hosts may meet one problem of the server's
            messages.append(message)

    def ok(self, *fields: str) -> bool:
        """Whether none of these form fields has a problem yet: a check that reads one that has
        would only repeat the mistake under another name."""
        return not any(field in self.by_field for field in fields)

    def lab(self, field: str, check: Callable[[], object]) -> bool:
        """Run a lab-layer option check; what it refuses is a problem with `field`."""
        try:
            check()
        except InvalidOption as exc:
            self.add(field, str(exc))
            return False
        return True


def spec_errors(spec: RunSpec, inventory: Inventory) -> dict[str, list[str]]:
    """Every problem with the spec, keyed by its form field ("device", not device_id; "__all__"
    for the spec as a whole). Empty: the run may be queued."""
    problems = _Problems()
    for name in MODEL_FIELDS:
        for message in _field_problems(name, getattr(spec, name), inventory):
            problems.add(FORM_FIELDS[name], message)
    _check_hosts(spec, inventory, problems)
    _check_clients(spec, inventory, problems)
    _check_storage(spec, inventory, problems)
    if problems.ok("pg_settings"):
        problems.lab("pg_settings", lambda: parse_settings(spec.pg_settings))
    _check_scale_fits(spec, inventory, problems)
    _check_workload(spec, inventory, problems)
    _check_init(spec, inventory, problems)
    _check_warmup_run(spec, problems)
    return problems.by_field


def _field_problems(name: str, value: object, inventory: Inventory) -> list[str]:
    """What the Run model's own field says about the value; for a row, whether it exists."""
    field = MODEL_FIELDS[name]
    if name in _ROWS:
        if value is None:
            return [] if field.null else [str(field.error_messages["null"])]
        if value not in getattr(inventory, _ROWS[name]):
            return [f"{_ROW_NAMES[_ROWS[name]]._meta.verbose_name} {value!r:.40} does not exist in the inventory."]
        return []
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{value} is not a number: give a finite one."]  # no validator would catch it
    if name in NUMBER_FIELDS and isinstance(value, int | float) and (problem := range_problem(name, value)):
        return [problem]  # one message naming the range, not Django's one per validator
    try:
        field.clean(value, None)
    except ValidationError as exc:
        return list(exc.messages)
    return []


def _check_hosts(spec: RunSpec, inventory: Inventory, problems: _Problems) -> None:
    server = inventory.hosts.get(spec.server_host_id)
    device, install = inventory.devices.get(spec.device_id), inventory.installs.get(spec.pg_install_id)
    if server:
        if refusal := server.refusal_for_runs():
            problems.add("server_host", refusal)
        elif not server.serves_postgres:
            problems.add("server_host", f"{server} does not serve PostgreSQL in the inventory: choose one that does.")
        if device and device.host_id != server.pk:
            problems.add("device", f"{device} is not a device of {server}.")
        if install and install.host_id != server.pk:
            problems.add("pg_install", f"{install} is not installed on {server}.")
    if install and install.removed_at is not None:
        problems.add("pg_install", f"{install} was removed from its host with its build: choose another install.")
    elif install and install.missing_since is not None:
        problems.add("pg_install", install.missing_refusal())


def _check_clients(spec: RunSpec, inventory: Inventory, problems: _Problems) -> None:
    """Each client host: in the inventory, named once, taking runs as a client, reachable from
    the server and reaching it, with a pgbench; one message per problem, naming the host."""
    ids = spec.client_host_ids
    if len(ids) > MAX_CLIENT_HOSTS:
        problems.add(CLIENT_FIELD, f"A run may have at most {MAX_CLIENT_HOSTS} client hosts; {len(ids)} are named.")
        return
    server = inventory.hosts.get(spec.server_host_id)
    install = inventory.installs.get(spec.pg_install_id)
    seen: set[int] = set()
    for host_id in ids:
        client = inventory.hosts.get(host_id)
        if client is None:
            problems.add(CLIENT_FIELD, f"{Host._meta.verbose_name} {host_id!r:.40} does not exist in the inventory.")
        elif host_id in seen:
            problems.add(CLIENT_FIELD, f"{client} is named twice: name each client host once.")
        elif problem := _client_problem(client, server, install):
            problems.add(CLIENT_FIELD, problem)
        seen.add(host_id)


def _client_problem(client: Host, server: Host | None, install: PgInstall | None) -> str | None:
    """The first thing that keeps this host from being one of the run's clients, or None."""
    if not client.enabled or not client.runs_clients:
        return (
            client.refusal_for_runs()
            or f"{client} does not run pgbench clients in the inventory: choose hosts that do, or none."
        )
    if server is None:
        return client.refusal_for_runs()  # the server's own problem is reported; nothing to check against
    on_this_machine = [host for host in (server, client) if host.is_benchlab_server]
    if client.pk == server.pk:
        return f"{client} is the run's server: leave it out to run pgbench on the server itself."
    if on_this_machine:
        return (
            f"{on_this_machine[0]} is this machine, not an address on the lab network: "
            "a client host and its server must reach each other over the network."
        )
    if not server.address:
        return f"{server} has no address a client host could reach it at."
    if not client.address:
        return f"{client} has no address the server could let in (pg_hba)."
    try:
        hba_address(client.address)
    except InvalidOption as exc:
        return str(exc)
    # The pgbench the run would use (lab_specs' choice); without a valid install the install's
    # own problem is reported.
    if install is not None and client_pgbench_install(install, client) is None:
        missing = [pg for pg in client.pg_installs.all() if pg.missing_since and pg.removed_at is None]
        if missing:
            return f"{client} has no PostgreSQL install, so no pgbench: {missing[0].missing_refusal()}"
        return f"{client} has no PostgreSQL install, so no pgbench, in the inventory."
    return client.refusal_for_runs()


def _check_storage(spec: RunSpec, inventory: Inventory, problems: _Problems) -> None:
    fstype = spec.filesystem
    if not problems.ok("filesystem"):
        return  # no valid filesystem to check the options and the device against
    if problems.ok("mount_options"):
        problems.lab("mount_options", lambda: parse_mount_options(fstype, spec.mount_options))
    if spec.mkfs_options and problems.ok("mkfs_options"):
        problems.lab("mkfs_options", lambda: parse_mkfs_options(fstype, spec.mkfs_options))
    device = inventory.devices.get(spec.device_id)
    if device is None:
        return
    keeps_files = fstype in (Filesystem.DIRECTORY, Filesystem.TMPFS)  # neither formats the device
    if not device.is_block_device and not keeps_files:
        problems.add("filesystem", f"{device} is a directory: choose directory or tmpfs.")
    if device.is_block_device and fstype == Filesystem.DIRECTORY:
        problems.add("filesystem", f"{device} is a block device: choose a filesystem to create.")
    if not keeps_files and not device.wipe_allowed:
        problems.add("device", f"{device} is not marked wipeable in the inventory.")


def _check_scale_fits(spec: RunSpec, inventory: Inventory, problems: _Problems) -> None:
    """Refuse data that cannot fit on the run's storage (`pgbench -i`'s scale: runs/lab/pgbench/scale_room.py;
    sysbench's tables times their rows: runs/lab/sysbench/data_size.py), rather than let the run fail with a
    full disk minutes later."""
    device = inventory.devices.get(spec.device_id)
    sysbench = spec.driver == Driver.SYSBENCH
    sized_by = ("sysbench_tables", "sysbench_table_size") if sysbench else ("scale",)
    if device is None or not problems.ok(*sized_by, "device", "filesystem", "mount_options", "driver"):
        return
    room = _storage_room(spec, device, inventory)
    if room is None:
        return  # the inventory does not know the size: the lab host will tell
    room_bytes, room_text = room
    max_wal = max_wal_bytes(parse_settings(spec.pg_settings)) if problems.ok("pg_settings") else DEFAULT_MAX_WAL_BYTES
    if sysbench:
        need = sysbench_need(spec.sysbench_tables, spec.sysbench_table_size, max_wal)
        what = f"{spec.sysbench_tables:,} sysbench tables of {spec.sysbench_table_size:,} rows"
        fitting = largest_fitting_table_size(spec.sysbench_tables, room_bytes, max_wal)
        advice = f"choose {fitting:,} rows a table or fewer, fewer tables, or a larger device."
    else:
        need = scale_need(spec.scale, max_wal)
        what, fitting = f"scale {spec.scale}", largest_fitting_scale(room_bytes, max_wal)
        advice = f"choose scale {fitting} or less, or a larger device."
    if need.total_bytes <= room_bytes:
        return
    problems.add(
        sized_by[-1],
        f"{what} needs about {binary_size(need.total_bytes)} (tables and indexes "
        f"{binary_size(need.data_bytes)}, WAL while loading {binary_size(need.wal_bytes)}, the empty cluster "
        f"{binary_size(need.cluster_bytes)}); {room_text}: " + (advice if fitting else "choose a larger device."),
    )


def _storage_room(spec: RunSpec, device: Device, inventory: Inventory) -> tuple[int, str] | None:
    """The bytes the run's storage leaves to PostgreSQL, and a sentence saying so; None if unknown."""
    if spec.filesystem == Filesystem.TMPFS:
        server = inventory.hosts.get(spec.server_host_id)
        options = parse_mount_options(spec.filesystem, spec.mount_options)
        tmpfs = tmpfs_room(options, server.memory_bytes) if server else None
        return (tmpfs[0], f"a tmpfs on {server} holds {binary_size(tmpfs[0])} ({tmpfs[1]})") if tmpfs else None
    if not device.capacity_bytes:
        return None
    size = binary_size(device.capacity_bytes)
    if spec.filesystem == Filesystem.DIRECTORY:
        return device.capacity_bytes, f"{device} has {size}"
    room = int(device.capacity_bytes * FORMATTED_SHARE)  # what mkfs leaves (runs/lab/pgbench/scale_room.py)
    return room, f"{device} has {size}, about {binary_size(room)} of it free once formatted with {spec.filesystem}"


def _check_workload(spec: RunSpec, inventory: Inventory, problems: _Problems) -> None:
    if not problems.ok("driver", "workload", "custom_script", "library_script", "workload_params"):
        return
    for field, message in driver_problems(spec, problems.ok):  # the driver against the rest (driver_checks)
        problems.add(field, message)
    if spec.driver != Driver.PGBENCH:
        return  # sysbench's own options are driver_checks'; pgbench's follow
    if not problems.ok("workload"):
        return
    library, problem = None, None
    if spec.workload == Workload.LIBRARY or spec.library_script_id is not None or spec.workload_params:
        library, problem = library_script_text(spec, inventory.scripts)  # the scripts read only then
    if problem and problems.ok(problem[0]):
        problems.add(*problem)
    if not problems.ok("workload", "library_script", "workload_params"):
        return
    custom = spec.workload in (Workload.CUSTOM, Workload.LIBRARY)
    if spec.workload == Workload.CUSTOM and not spec.custom_script.strip():
        problems.add("custom_script", "A custom workload needs its script.")
        return
    if not problems.ok("clients", "threads", "duration_s", "query_mode"):
        return  # pgbench's rules would repeat what is wrong with them
    options = RunOptions(
        builtin=None if custom else spec.workload,
        custom_script=library if library is not None else spec.custom_script if custom else None,
        clients=spec.clients,
        threads=spec.threads,
        # The warm-up is part of pgbench's run; a bad one is reported, and left out here.
        duration_s=spec.duration_s + (spec.warmup_s if problems.ok("warmup_s") else 0),
        query_mode=spec.query_mode,
        rate_tps=spec.rate_limit_tps if problems.ok("rate_limit_tps") else None,
        log_sampling_rate=spec.log_sampling_rate if problems.ok("log_sampling_rate") else None,
        latency_limit_ms=spec.latency_limit_ms if problems.ok("latency_limit_ms") else None,
    )
    try:
        options.validate()
    except InvalidOption as exc:
        # pgbench's messages name what they are about; the rest concern the spec as a whole.
        message = str(exc)
        script_field = "library_script" if library is not None else "custom_script"
        field = "threads" if "threads" in message else script_field if "script" in message else NON_FIELD_ERRORS
        problems.add(field, message)


def _check_warmup_run(spec: RunSpec, problems: _Problems) -> None:
    """A separate warm-up run: its clients only with its seconds, and pgbench on the server or on
    one client host (several hosts' warm-ups are not started together). It is pgbench's: driver_checks
    refuses it for sysbench."""
    if not problems.ok("warmup_run_s", "warmup_run_clients"):
        return
    if spec.warmup_run_clients is not None and not spec.warmup_run_s:
        problems.add("warmup_run_clients", "Warm-up run clients need a warm-up run: set warm-up run (s), or leave "
                                           "the clients empty.")  # fmt: skip
    if spec.warmup_run_s and len(spec.client_host_ids) > 1:
        problems.add("warmup_run_s", "A warm-up run is for pgbench on the server or on one client host; with "
                                     f"{len(spec.client_host_ids)} client hosts set it to 0.")  # fmt: skip


def _check_init(spec: RunSpec, inventory: Inventory, problems: _Problems) -> None:
    """pgbench -i's own options together (each one's range is its field's): a partition method
    only with partitions, the steps against the foreign-keys choice, partitions only where
    pgbench has them (13 and later)."""
    if spec.driver != Driver.PGBENCH or not problems.ok(
        "partitions", "fillfactor", "partition_method", "init_steps", "scale"
    ):
        return  # sysbench's prepare has none of these (driver_checks refuses them)
    # Without its steps: what is wrong with those is said beside them, after the rest is right.
    init = init_options(spec.replace(init_steps=""))
    if problems.lab("partition_method", init.validate) and spec.init_steps:
        problems.lab("init_steps", lambda: check_init_steps(spec.init_steps, spec.foreign_keys))
    install = inventory.installs.get(spec.pg_install_id)
    major = re.match(r"\d+", install.version) if install else None
    if spec.partitions and install and major and int(major[0]) < 13:
        problems.add("partitions", f"partitions need pgbench 13 or later; {install} is {install.version}.")
