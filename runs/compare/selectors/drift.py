"""Reads for drift (runs.compare.drift): a host's or a device's runs that recorded their environment,
as the facts drift follows, and the changes a set of compared runs spans.

Only the JSON keys drift needs are selected (KT annotations), never a run's whole environment
(whose host facts hold every block device's listing); one query per host or device, and one for
a whole comparison however many runs it has.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import CharField, Func, Q, QuerySet
from django.db.models.fields.json import KT, KeyTransform
from django.db.models.functions import Coalesce

from runs.common.units import binary_size, page_size
from runs.compare.differences import short_version
from runs.compare.drift import Change, History, Observation, changes_of, spanned
from runs.models import Device, Host, Run, RunClient, RunState

# Runs that ran: only they can have recorded an environment.
ENDED = (RunState.DONE, RunState.FAILED, RunState.CANCELLED)


def _device_size(raw: str) -> str:
    # Exact: a partition grown by a few MiB is a different device, though both read "2 GiB".
    return f"{binary_size(int(raw))} ({int(raw):,} bytes)" if raw.isdigit() else raw


def _ram(raw: str) -> str:
    # Three significant digits: MemTotal moves by some kB with every kernel; a DIMM more or less
    # moves it by GiB.
    return binary_size(int(raw)) if raw.isdigit() else raw


Shown = Callable[[str], str]
HOST_FACTS: tuple[tuple[str, str, Shown], ...] = (
    ("kernel", "kernel", str),
    ("distribution", "distribution", str),
    ("cpu_model", "CPU", str),
    ("cpu_cores", "CPU cores", str),
    ("memory_bytes", "RAM", _ram),
)
# Followed per install (its bin_dir): a host's runs alternate between installs on purpose.
PG_FACTS: tuple[tuple[str, str, Shown], ...] = (
    ("version", "PostgreSQL build", short_version),
    ("block_size", "page size", page_size),
    ("wal_block_size", "WAL block size", page_size),
    ("configure", "configure options", str),
)
DEVICE_FACTS: tuple[tuple[str, str, Shown], ...] = (
    ("model", "model", str),
    ("serial", "serial", str),
    ("firmware", "firmware", str),
    ("size_bytes", "size", _device_size),
)

PRIVATE_FACTS = {"serial", "configure options"}


def _annotations() -> dict[str, Any]:
    found: dict[str, Any] = {"at": Coalesce("started_at", "created_at")}
    for key, _, _ in HOST_FACTS:
        found[f"h_{key}"] = KT(f"environment__host__{key}")
        found[f"c_{key}"] = KT(f"environment__client__{key}")
    for key, _, _ in PG_FACTS:
        found[f"pg_{key}"] = KT(f"environment__postgresql__{key}")
    found["pg_bin_dir"] = KT("environment__postgresql__bin_dir")
    # Each client host's facts by name (runs with several); older runs have only "client".
    found["clients_env"] = KeyTransform("clients", "environment")
    for key, _, _ in DEVICE_FACTS:
        found[f"dev_{key}"] = KT(f"environment__device__probed__{key}")
    return found


def _rows(where: Q, window: tuple[datetime, datetime] | None = None) -> QuerySet[Run, dict[str, Any]]:
    """The runs that recorded an environment, oldest first (by when they started), started
    within `window` if given."""
    annotations = _annotations()
    runs = Run.objects.filter(where, state__in=ENDED, environment__has_key="host").annotate(**annotations)
    if window is not None:
        runs = runs.filter(Q(at__range=window))
    return runs.order_by("at", "pk").values("pk", "server_host_id", "device_id", *annotations)


def _nothing_changed(where: Q, window: tuple[datetime, datetime]) -> bool:
    """Whether every host and every device recorded the same facts in every run within the
    window (and no run had client hosts): then there is no change to look for. The usual case,
    answered by the database from the distinct combinations of facts (a handful of rows however
    many runs lie between the compared ones), before reading the runs one by one."""
    annotations = _annotations()
    facts = [name for name in annotations if name != "at"]
    runs = Run.objects.filter(where, state__in=ENDED, environment__has_key="host").annotate(**annotations)
    in_window = runs.filter(Q(at__range=window)).order_by()  # no ordering column in the DISTINCT
    combinations = list(in_window.values("server_host_id", "device_id", *facts).distinct()[:100])
    if len(combinations) == 100 or any(row["clients_env"] or row["c_kernel"] for row in combinations):
        return False
    host_facts = [f"h_{key}" for key, _, _ in HOST_FACTS]
    pg_facts = [f"pg_{key}" for key, _, _ in PG_FACTS]
    device_facts = [f"dev_{key}" for key, _, _ in DEVICE_FACTS]
    seen: dict[tuple[Any, ...], set[tuple[Any, ...]]] = {}
    for row in combinations:
        for key, names in (
            (("host", row["server_host_id"]), host_facts),
            (("install", row["server_host_id"], row["pg_bin_dir"]), pg_facts),
            (("device", row["device_id"]), device_facts),
        ):
            seen.setdefault(key, set()).add(tuple(row[name] for name in names))
    return all(len(values) == 1 for values in seen.values())


def _uses(host_ids: Iterable[int]) -> Q:
    """Runs with one of these hosts as server or as a client host."""
    as_client = RunClient.objects.filter(host_id__in=list(host_ids)).values("run_id")
    return Q(server_host_id__in=list(host_ids)) | Q(pk__in=as_client)


def _clients_of(rows: Sequence[dict[str, Any]]) -> dict[int, set[int]]:
    """Each run's client hosts (ids): one query for all the rows."""
    found: dict[int, set[int]] = {}
    pairs = RunClient.objects.filter(run_id__in=[row["pk"] for row in rows]).values_list("run_id", "host_id")
    for run_id, host_id in pairs:
        found.setdefault(run_id, set()).add(host_id)
    return found


def _value(raw: Any, shown: Shown) -> str | None:
    return shown(str(raw)) if raw not in (None, "") else None


def host_observation(row: dict[str, Any], host_id: int, host_name: str) -> Observation:
    """What a run recorded of host `host_id`: as its server, the host's facts and its
    PostgreSQL install's build; as one of its client hosts, that client's facts."""
    if row["server_host_id"] == host_id:
        facts = {label: _value(row[f"h_{key}"], shown) for key, label, shown in HOST_FACTS}
    else:
        facts = {label: _value(value, shown) for (_, label, shown), value in _client_facts(row, host_name)}
    if row["server_host_id"] == host_id and row["pg_bin_dir"]:
        for key, label, shown in PG_FACTS:
            facts[f"{label} ({row['pg_bin_dir']})"] = _value(row[f"pg_{key}"], shown)
    return Observation(row["pk"], row["at"], facts)


def _client_facts(row: dict[str, Any], host_name: str) -> list[tuple[tuple[str, str, Shown], Any]]:
    entries = [e for e in row["clients_env"] or [] if isinstance(e, dict) and e.get("name") == host_name]
    if entries:
        return [(fact, entries[0].get(fact[0])) for fact in HOST_FACTS]
    return [(fact, row[f"c_{fact[0]}"]) for fact in HOST_FACTS]  # a run from before several client hosts


def device_observation(row: dict[str, Any]) -> Observation:
    return Observation(
        row["pk"], row["at"], {label: _value(row[f"dev_{key}"], shown) for key, label, shown in DEVICE_FACTS}
    )


def host_drift(host: Host) -> History:
    """What changed on `host` over the runs it served or ran pgbench for."""
    rows = _rows(_uses([host.pk]))
    return changes_of([host_observation(row, host.pk, host.name) for row in rows])


def device_drift(device: Device) -> History:
    """What changed in `device` as its runs probed it (model, serial, firmware, size)."""
    return changes_of([device_observation(row) for row in _rows(Q(device=device))])


@dataclass(frozen=True)
class SpannedChange:
    subject: str  # "lab1", or "lab1:ssd0" for a device
    change: Change
    before: int  # compared runs on that host or device before the change
    after: int  # and after it

    def said_between(self, between: str = "") -> str:
        """The change, fit for shared pages too: no install's path, and no serial or configure
        line (they name paths and drives; the host's page shows them); `between` as Change.said."""
        return self._said(between=between)

    def said_where(self, where: str) -> str:
        """As said_between, with the whole place said ("during round 4"): `where` as Change.said."""
        return self._said(where=where)

    def _said(self, between: str = "", where: str = "") -> str:
        fact = self.change.fact.split(" (/", 1)[0]
        private = fact in PRIVATE_FACTS
        return self.change.said(self.subject, fact=fact, with_values=not private, between=between, where=where)

    def said(self) -> str:
        """The comparison's warning."""
        return f"{self.said_between()}; compared runs on both sides ({self.before} before, {self.after} after)"


def comparison_drift(runs: Sequence[Run]) -> list[SpannedChange]:
    """The changes on the compared runs' hosts (server or client) and devices that fall between
    the earliest and the latest compared run on each: one query."""
    ran = [run for run in runs if run.state in ENDED and (run.started_at or run.created_at)]
    if len(ran) < 2:
        return []
    times = {run.pk: run.started_at or run.created_at for run in ran}
    hosts = {host.pk: host.name for run in ran for host in run.hosts}
    devices = {run.device_id: str(run.device) for run in ran}
    where = _uses(hosts) | Q(device_id__in=devices)
    window = (min(times.values()), max(times.values()))
    if _nothing_changed(where, window):
        return []
    rows = list(_rows(where, window))
    clients_of = _clients_of(rows)
    recorded = {row["pk"] for row in rows}
    found: list[SpannedChange] = []
    for host_id, name in hosts.items():
        mine = [row for row in rows if host_id == row["server_host_id"] or host_id in clients_of.get(row["pk"], ())]
        compared = _times(times, recorded, (run for run in ran if host_id in {h.pk for h in run.hosts}))
        history = changes_of([host_observation(row, host_id, name) for row in mine])
        found += [SpannedChange(name, *spans) for spans in spanned(history.changes, compared)]
    for device_id, name in devices.items():
        mine = [row for row in rows if row["device_id"] == device_id]
        compared = _times(times, recorded, (run for run in ran if run.device_id == device_id))
        history = changes_of([device_observation(row) for row in mine])
        found += [SpannedChange(name, *spans) for spans in spanned(history.changes, compared)]
    return found


class _FactsFingerprint(Func):
    """md5 of the environment's parts drift reads facts from: equal for runs that recorded the same
    facts (and the same of whatever else those parts hold), read with five extractions of the
    environment where the facts themselves take twenty."""

    template = "md5(concat_ws('|', %(parts)s))"
    output_field = CharField()

    def __init__(self) -> None:
        super().__init__()
        self.extra["parts"] = ", ".join(f"runs_run.environment -> '{part}'" for part in DRIFT_PARTS)


DRIFT_PARTS = ("host", "device", "postgresql", "client", "clients")  # where _annotations reads


def _edges(rows: Sequence[dict[str, Any]]) -> list[int]:
    """The ids of the rows (in time order) whose fingerprint differs from the row before or after:
    a stretch of identical records says no more than its first and last (which bracket any change)."""
    last = len(rows) - 1
    prints = [row["facts"] for row in rows]
    return [
        row["pk"] for i, row in enumerate(rows) if i in (0, last) or not prints[i - 1] == prints[i] == prints[i + 1]
    ]


def drift_among(run_ids: Sequence[int], hosts: dict[int, str], devices: dict[int, str]) -> list[SpannedChange]:
    """The changes on `hosts` and `devices` as these runs alone recorded them, each with how many of
    the runs lie before and after it: for runs that all ran on those hosts and that device (a
    series: its runs share them), whose own records bracket every change. Two queries: every run's
    fingerprint of its facts, then the facts of the runs around a change."""
    recorded = Run.objects.filter(pk__in=list(run_ids), state__in=ENDED, environment__has_key="host")
    every = list(
        recorded.annotate(at=Coalesce("started_at", "created_at"), facts=_FactsFingerprint())
        .order_by("at", "pk")
        .values("pk", "at", "facts")
    )
    times, rows = [row["at"] for row in every], list(_rows(Q(pk__in=_edges(every))))
    found: list[SpannedChange] = []
    for host_id, name in hosts.items():
        history = changes_of([host_observation(row, host_id, name) for row in rows])
        found += [SpannedChange(name, *spans) for spans in spanned(history.changes, times)]
    for device_id, name in devices.items():
        history = changes_of([device_observation(row) for row in rows if row["device_id"] == device_id])
        found += [SpannedChange(name, *spans) for spans in spanned(history.changes, times)]
    return found


def _times(times: dict[int, datetime], recorded: set[int], runs: Iterable[Run]) -> list[datetime]:
    # Only the compared runs that recorded their environment: one that never ran saw no kernel.
    return [times[run.pk] for run in runs if run.pk in recorded]
