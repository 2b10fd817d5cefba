"""A run's method facts and checks, read from the run: for its page, and for the two columns lists
filter on (Run.memory_tier, Run.durable), which are written with its results."""

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from django.db.models.fields.json import KT

from runs.bench.specs import RunSpec
from runs.compare.query import Group
from runs.compare.selectors.comparison import ComparisonResult
from runs.method.comparison_checks import GroupFacts, comparison_checks
from runs.method.facts import MethodFacts, recorded_facts, spec_facts
from runs.method.outcome import Check, Status
from runs.method.preview import PROBE, RUN, HostAsRead, PreviewWarning, preview_warnings
from runs.method.run_checks import Samples, against_stable_numbers, busy_during, check_stability, run_checks
from runs.method.tiers import memory_tier, not_durable_because
from runs.models import Host, Run, RunSample


def run_facts(run: Run) -> MethodFacts:
    """What the run recorded once it has results; before that, what it asks for."""
    spec = RunSpec.from_run(run)
    if run.results_stored_at is None and not run.environment:
        return spec_facts(spec, run.server_host.memory_bytes)
    return recorded_facts(spec, run.environment, run.metrics)


def run_method(run: Run) -> list[Check]:
    """The run page's Method panel: every check, with the warnings the user accepted."""
    return run_checks(run_facts(run), _measured_tps(run), _accepted_reasons(run))


def spec_method(spec: RunSpec) -> list[Check]:
    """The checks of a run not queued yet: what it asks for, on its server's probed RAM."""
    memory = Host.objects.filter(pk=spec.server_host_id).values_list("memory_bytes", flat=True).first()
    return run_checks(spec_facts(spec, memory))


def compared_method(result: ComparisonResult) -> list[Check]:
    """The Method panel of a comparison page, its report, its shared page and a campaign's page."""
    grouping = result.query.grouping
    varies = [name for i, name in enumerate(grouping) if len({group.key[i] for group in result.groups}) > 1]
    return comparison_method(result.groups, varies)


def comparison_method(groups: Sequence[Group], grouping_varies: Iterable[str]) -> list[Check]:
    """The comparison's Method panel: its groups' runs that ran, read in one query of the few
    records the checks need (not the whole environment, which lists every disk of the host)."""
    ran = [run for group in groups for run in group.runs if run.results_stored_at is not None]
    records = {row["pk"]: row for row in Run.objects.filter(pk__in=[run.pk for run in ran]).values("pk", **RECORDS)}
    facts = {run.pk: recorded_facts(RunSpec.from_run(run), *_environment_of(records[run.pk])) for run in ran}
    found = [
        GroupFacts(
            group.label,
            [facts[run.pk] for run in group.runs if run.pk in facts],
            unsteady=sum(1 for run in group.runs if run.pk in facts and run.steady is False),
        )
        for group in groups
    ]
    return comparison_checks(found, frozenset(grouping_varies))


def campaign_preview_method(specs: Mapping[int, RunSpec]) -> tuple[list[PreviewWarning], list[HostAsRead]]:
    """The campaign preview's method warnings for its runnable configurations (number -> spec), and
    its checklist: each of their server and client hosts as last read."""
    servers = {spec.server_host_id for spec in specs.values()}
    hosts = list(dict.fromkeys(pk for spec in specs.values() for pk in (spec.server_host_id, *spec.client_host_ids)))
    memory = dict(Host.objects.filter(pk__in=servers).values_list("pk", "memory_bytes"))
    read = hosts_as_last_read(hosts)
    return preview_warnings(specs, memory, read), list(read.values())


def hosts_as_last_read(host_ids: Sequence[int]) -> dict[int, HostAsRead]:
    """Each host as read last, by its probe (Host.facts["now"]) or by its last run that recorded it
    (as the server: its tuning and load; as a client host: its load), whichever is newer."""
    hosts = Host.objects.filter(pk__in=host_ids).values("pk", "name", now=KT("facts__now"))
    read = {row["pk"]: _newest(row["name"], _probed(row["now"]), _by_a_run(row["pk"], row["name"])) for row in hosts}
    return {pk: read[pk] for pk in host_ids if pk in read}


def _newest(name: str, *readings: HostAsRead | None) -> HostAsRead:
    found = [reading for reading in readings if reading is not None and reading.at is not None]
    return replace(max(found, key=_read_at), name=name) if found else HostAsRead(name, "")


def _read_at(reading: HostAsRead) -> datetime:
    return reading.at or datetime.min.replace(tzinfo=UTC)


def _probed(text: str | None) -> HostAsRead | None:
    try:
        now = json.loads(text) if text else None
        at = datetime.fromisoformat(now["read_at"]) if isinstance(now, dict) else None
    except (KeyError, TypeError, ValueError):  # not a reading as host_now wrote it
        return None
    if at is None or at.tzinfo is None or not isinstance(now, dict):
        return None
    found = against_stable_numbers(_as_mapping(now.get("host")), _as_mapping(now.get("during")), "when read")
    return HostAsRead("", PROBE, at, found=tuple(found))


def _by_a_run(host_id: int, name: str) -> HostAsRead | None:
    """The host's last run that read it: as its server or as one of its client hosts."""
    # When its results were stored: the run's reading is as old as its window's end, near enough.
    served = (
        Run.objects.filter(server_host_id=host_id, environment__method__host__isnull=False)
        .exclude(results_stored_at=None)
        .order_by("-results_stored_at", "-pk")
        .values(
            "pk", "results_stored_at", host=KT("environment__method__host"), during=KT("environment__method__during")
        )
        .first()
    )
    drove = (
        Run.objects.filter(run_clients__host_id=host_id, environment__method__during_clients__has_key=name)
        .exclude(results_stored_at=None)
        .order_by("-results_stored_at", "-pk")
        .values("pk", "results_stored_at", drove=KT("environment__method__during_clients"))
        .first()
    )
    readings = []
    if served is not None:
        found = against_stable_numbers(json.loads(served["host"] or "{}"), json.loads(served["during"] or "{}"))
        readings.append(HostAsRead("", RUN, served["results_stored_at"], served["pk"], tuple(found)))
    if drove is not None:
        during = _as_mapping(json.loads(drove["drove"] or "{}").get(name))
        readings.append(HostAsRead("", RUN, drove["results_stored_at"], drove["pk"], tuple(busy_during(during))))
    return max(readings, key=_read_at) if readings else None


def _as_mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def method_columns(run: Run) -> dict[str, Any]:
    """Run.memory_tier, durable and steady for a run whose results are being stored."""
    facts = recorded_facts(RunSpec.from_run(run), run.environment, run.metrics)
    stability = check_stability(facts, _measured_tps(run))
    steady = None if stability.status == Status.NOT_RECORDED else stability.status == Status.PASSED
    return {"memory_tier": memory_tier(facts), "durable": not not_durable_because(facts), "steady": steady}


# What recorded_facts reads of a run, each as JSON text (KT): the paths of Run.environment and Run.metrics.
RECORDS = {
    "method": KT("environment__method"),
    "memory_bytes": KT("environment__host__memory_bytes"),
    "mounted": KT("environment__filesystem__mount_options"),
    "settings": KT("environment__postgresql__non_default_settings"),
    "block_size": KT("environment__postgresql__block_size"),
    "pg_stats": KT("metrics__pg_stats"),
}


def _environment_of(row: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parts of environment and metrics that RECORDS read, as recorded_facts takes them."""

    def parsed(key: str) -> Any:
        return json.loads(row[key]) if row[key] else None

    environment = {
        "method": parsed("method"),
        "host": {"memory_bytes": parsed("memory_bytes")},
        "postgresql": {"non_default_settings": parsed("settings"), "block_size": parsed("block_size")},
    }
    if row["mounted"] is not None:
        environment["filesystem"] = {"mount_options": row["mounted"]}
    return environment, {"pg_stats": parsed("pg_stats")}


def _measured_tps(run: Run) -> Samples:
    rows = RunSample.objects.filter(run=run, warmup=False).order_by("second").values_list("second", "tps")
    return [(float(second), tps) for second, tps in rows]


def _accepted_reasons(run: Run) -> dict[str, dict[str, str]]:
    return {key: entry for key, entry in run.method_overrides.items() if isinstance(entry, dict)}
