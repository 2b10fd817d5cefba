"""A run's method facts and checks, read from the run: for its page, and for the two columns lists
filter on (Run.memory_tier, Run.durable), which are written with its results."""

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models.fields.json import KT

from runs.bench.specs import RunSpec
from runs.compare.query import Group
from runs.compare.selectors.comparison import ComparisonResult
from runs.method.comparison_checks import GroupFacts, comparison_checks
from runs.method.facts import MethodFacts, recorded_facts, spec_facts
from runs.method.outcome import Check, Status
from runs.method.preview import PreviewWarning, preview_warnings
from runs.method.run_checks import Samples, against_stable_numbers, check_stability, run_checks
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


def campaign_preview_method(specs: Mapping[int, RunSpec]) -> list[PreviewWarning]:
    """The campaign preview's method warnings for its runnable configurations (number -> spec)."""
    hosts = {spec.server_host_id for spec in specs.values()}
    memory = dict(Host.objects.filter(pk__in=hosts).values_list("pk", "memory_bytes"))
    return preview_warnings(specs, memory, hosts_as_last_measured(hosts))


def hosts_as_last_measured(host_ids: Iterable[int]) -> dict[int, str]:
    """For each server whose last run with host facts found it set against stable numbers: what,
    and by which run ("lab1: CPU frequency governor powersave (its run 12 found it)")."""
    said = {}
    for host_id in host_ids:
        last = (
            Run.objects.filter(server_host_id=host_id, environment__method__host__isnull=False)
            .order_by("-finished_at", "-pk")
            .values(
                "pk",
                "server_host__name",
                host=KT("environment__method__host"),
                during=KT("environment__method__during"),
            )
            .first()
        )
        if last is None:
            continue
        found = against_stable_numbers(json.loads(last["host"] or "{}"), json.loads(last["during"] or "{}"))
        if found:
            said[host_id] = f"{last['server_host__name']}: {'; '.join(found)} (its run {last['pk']} found it)"
    return said


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
