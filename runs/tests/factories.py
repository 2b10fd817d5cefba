"""Small builders for inventory rows; each test says only what matters to it."""

from typing import Any

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import Group, User

from runs.bench.services.runs import series_key_of
from runs.models import Device, Host, PgInstall, Run, RunArtifact, RunClient, RunState
from runs.models.run_clients import client_database


def make_host(**fields: Any) -> Host:
    defaults: dict[str, Any] = {
        "name": "lab1",
        "address": "10.200.0.11",
        "transport": Host.Transport.SSH,
        "private_key_path": "/root/.ssh/id_ed25519",
    }
    return Host.objects.create(**(defaults | fields))


def make_device(host: Host, **fields: Any) -> Device:
    defaults: dict[str, Any] = {"name": "ssd0", "kind": Device.Kind.SSD, "path": "/dev/disk/by-id/ata-TEST_SSD_1"}
    return Device.objects.create(host=host, **(defaults | fields))


def make_pg_install(host: Host, **fields: Any) -> PgInstall:
    defaults: dict[str, Any] = {"bin_dir": "/usr/lib/postgresql/15/bin", "version": "15.19"}
    return PgInstall.objects.create(host=host, **(defaults | fields))


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """benchlab's password hashing with far fewer rounds, for the test process only (conftest):
    a hash carries its round count, so the web server and the worker the tests start, which hash
    as benchlab does, still check the passwords of the users made here."""

    iterations = 1_000


def make_user(username: str, role: str | None = None, password: str | None = None) -> User:
    # Without a password the account can only be logged in by the test client (no slow hashing).
    user = User.objects.create_user(username=username, password=password)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def make_run(host: Host, device: Device, pg: PgInstall, **fields: Any) -> Run:
    """A finished run as the database holds it (no worker involved), with one raw output and its
    client hosts in their order (client_hosts=[...]; client_host=: one of them, for short)."""
    clients: list[Host] = [*fields.pop("client_hosts", ())]
    if one := fields.pop("client_host", None):
        clients.append(one)
    defaults: dict[str, Any] = {"state": RunState.DONE, "scale": 1, "clients": 2, "threads": 1, "duration_s": 5}
    run = Run(server_host=host, device=device, pg_install=pg, **(defaults | fields))
    run.series_key = series_key_of(run, [client.pk for client in clients])  # as queueing it would
    run.save()
    RunClient.objects.bulk_create(
        RunClient(run=run, host=client, position=n, database=client_database(n, len(clients), run.shared_database))
        for n, client in enumerate(clients, start=1)
    )
    RunArtifact.objects.create(run=run, name="pgbench.stdout.txt", content="tps = 123.4\n")
    return run


def run_form_fields(host: Host, device: Device, pg: PgInstall, **changes: object) -> dict[str, object]:
    """A valid queue form (or API body) for a run on host's device, changed by `changes`."""
    fields: dict[str, object] = {
        "server_host": host.pk,
        "device": device.pk,
        "filesystem": "ext4",
        "mount_options": "noatime,data=writeback",
        "mkfs_options": "",
        "pg_install": pg.pk,
        "pg_settings": "shared_buffers = 64MB",
        "driver": "pgbench",
        "workload": "tpcb-like",
        "custom_script": "",
        "sysbench_tables": 1,
        "sysbench_table_size": 10_000,
        "scale": 10,
        "clients": 4,
        "threads": 2,
        "duration_s": 30,
        "warmup_s": 5,
        "warmup_run_s": 0,  # its clients left out: empty, the measurement's
        "query_mode": "prepared",
        "rate_limit_tps": "",
        "log_sampling_rate": "1",
        "partitions": 0,
        "partition_method": "",
        "fillfactor": 100,
        "unlogged_tables": False,
        "foreign_keys": False,
        "init_steps": "",
        "client_hosts": [],
        "shared_database": False,
        "random_seed": "",
        "cache_state": "warm",
        "data_state": "reused",
        "checkpoint_before": True,
        "settle_s": 5,
    }
    return fields | changes
