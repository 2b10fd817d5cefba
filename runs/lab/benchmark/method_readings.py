"""What a run reads off its hosts and server so that a reader can judge its number (issue 32;
the method checks, runs.method, interpret these readings, stored as Run.environment["method"]):
the memory tier's database size and shared_buffers, the settings that make it durable or not,
the device's write cache and scheduler, the host's tuning, and what else the host did while it
measured: the server host's, and each client host's (pgbench's own host when it is not the server).

All but the window's end are read just before pgbench starts (stages.ready_benches) and go
into the resume record, so a run finished by another worker (resume.py) stores them too; the
end is sampled by whichever worker sees pgbench exit. The window here is pgbench's whole run
(warm-up included), as the statistics before and after are (metrics.py).

A read never fails a run: a fact that cannot be read (a lost connection, an answer that is not
what was expected) is None, and the run goes on measuring.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from runs.lab.benchmark.metrics import database_list_sql
from runs.lab.errors import LabError
from runs.lab.host.activity import activity_sample
from runs.lab.host.tuning import device_queue, host_tuning
from runs.lab.parse.activity import ActivitySample, activity_sample_from_json, during_json
from runs.lab.parse.server_settings import SETTINGS, ServerFacts, server_facts_from
from runs.lab.parse.tuning import DeviceQueue, HostTuning
from runs.lab.postgres.cluster import Cluster, psql
from runs.lab.transport.interface import Transport

T = TypeVar("T")
_SERVER_KEYS = ("database_bytes", "shared_buffers_bytes", "settings")
_SETTING_KEYS = ("fsync", "synchronous_commit", "full_page_writes", "checkpoint_timeout_s", "max_wal_size_bytes")
Clients = Sequence[tuple[str, Transport]]  # each client host's name (the inventory's) and connection


@dataclass
class MethodReadings:
    server: ServerFacts = field(default_factory=ServerFacts)
    device: DeviceQueue = field(default_factory=DeviceQueue)
    host: HostTuning = field(default_factory=HostTuning)
    start: ActivitySample | None = None  # the host at the measured window's start
    end: ActivitySample | None = None  # and at its end
    # Each client host's, by name (none when pgbench runs on the server); None: not read.
    clients_start: dict[str, ActivitySample | None] = field(default_factory=dict)
    clients_end: dict[str, ActivitySample | None] = field(default_factory=dict)

    def as_environment(self) -> dict[str, Any]:
        """Run.environment["method"]'s keys this module fills (other parts of issue 32 add theirs)."""
        return {
            **self._before(),
            "during": during_json(self.start, self.end),
            "during_clients": {
                name: during_json(start, self.clients_end.get(name)) for name, start in self.clients_start.items()
            },
        }

    def _before(self) -> dict[str, Any]:
        server = self.server
        return {
            "database_bytes": server.database_bytes,
            "shared_buffers_bytes": server.shared_buffers_bytes,
            "settings": {key: server.settings.get(key) for key in _SETTING_KEYS},
            "device": self.device.as_json(),
            "host": self.host.as_json(),
        }

    def as_record(self) -> dict[str, Any]:
        """What the resume record keeps: everything read before the window."""
        return {
            **self._before(),
            "start": self.start.as_json() if self.start else None,
            "clients_start": {
                name: sample.as_json() if sample else None for name, sample in self.clients_start.items()
            },
        }


def server_facts(transport: Transport, cluster: Cluster, database: str | Sequence[str]) -> ServerFacts:
    """The run's databases' size and the settings as the running server reports them."""
    listed = database_list_sql(database)
    names = ", ".join(f"'{name}'" for name in SETTINGS)  # fixed names
    sql = f"""SELECT json_build_object(
        'database_bytes', (SELECT sum(pg_database_size(datname))::bigint FROM pg_database WHERE datname IN ({listed})),
        'settings', (SELECT json_object_agg(name, json_build_array(setting, unit))
                     FROM pg_settings WHERE name IN ({names})))"""  # noqa: S608
    return server_facts_from(psql(transport, cluster, sql))


def _unless_unreadable(read: Callable[[], T], unread: T) -> T:
    """A fact is worth less than the measurement: one that cannot be read is left unread."""
    try:
        return read()
    except (LabError, ValueError):
        return unread


def facts_before(
    transport: Transport,
    cluster: Cluster,
    database: str | Sequence[str],
    device: str | None,
    run_dir: str,
    clients: Clients = (),
) -> MethodReadings:
    """Everything read before the measured window, the hosts' activity last (closest to it)."""
    return MethodReadings(
        server=_unless_unreadable(lambda: server_facts(transport, cluster, database), ServerFacts()),
        device=_unless_unreadable(lambda: device_queue(transport, device), DeviceQueue()),
        host=_unless_unreadable(lambda: host_tuning(transport), HostTuning()),
        clients_start=_activities(clients, run_dir),
        start=_unless_unreadable(lambda: activity_sample(transport, run_dir), None),
    )


def note_window_end(facts: MethodReadings, transport: Transport, run_dir: str, clients: Clients = ()) -> None:
    """The hosts' activity once pgbench has exited: the other end of the window."""
    facts.end = _unless_unreadable(lambda: activity_sample(transport, run_dir), None)
    facts.clients_end = _activities(clients, run_dir)


def _activities(clients: Clients, run_dir: str) -> dict[str, ActivitySample | None]:
    """Each client host's sample (its pgbench runs as the run's user there: left out as on the server)."""
    return {name: _unless_unreadable(partial(activity_sample, client, run_dir), None) for name, client in clients}


def _scalars(data: object, keys: Sequence[str], what: str) -> dict[str, Any]:
    if not isinstance(data, dict) or set(data) != set(keys):
        raise ValueError(f"{what} is not an object of {', '.join(keys)}")
    if not all(value is None or isinstance(value, str | int | float) for value in data.values()):
        raise ValueError(f"{what} holds something other than words and numbers")
    return data


def method_readings_from_record(data: object) -> MethodReadings:
    """MethodReadings as as_record() wrote them into the resume record; ValueError if they are not.
    A record written before client hosts were sampled has no clients_start: then none were."""
    keys = {*_SERVER_KEYS, "device", "host", "start"}
    if not isinstance(data, dict) or set(data) - {"clients_start"} != keys:
        raise ValueError(f"the method facts are not an object of {', '.join(sorted(keys))} (and clients_start)")
    sizes = (data["database_bytes"], data["shared_buffers_bytes"])
    if not all(size is None or (isinstance(size, int) and not isinstance(size, bool)) for size in sizes):
        raise ValueError("the database's size and shared_buffers are not whole numbers")
    settings = _scalars(data["settings"], _SETTING_KEYS, "the settings")
    device = _scalars(data["device"], ("write_cache", "scheduler"), "the device's queue")
    host = _scalars(data["host"], list(HostTuning.__dataclass_fields__), "the host's tuning")
    start = data["start"]
    return MethodReadings(
        server=ServerFacts(sizes[0], sizes[1], dict(settings)),
        device=DeviceQueue(**device),
        host=HostTuning(**host),
        start=activity_sample_from_json(start) if start is not None else None,
        clients_start=_client_samples(data.get("clients_start", {})),
    )


def _client_samples(data: object) -> dict[str, ActivitySample | None]:
    if not isinstance(data, dict) or not all(isinstance(name, str) for name in data):
        raise ValueError("the client hosts' samples are not an object by host name")
    return {name: activity_sample_from_json(sample) if sample is not None else None for name, sample in data.items()}
