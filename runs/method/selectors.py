"""A run's method facts and checks, read from the run: for its page, and for the two columns lists
filter on (Run.memory_tier, Run.durable), which are written with its results."""

from runs.bench.specs import RunSpec
from runs.method.facts import MethodFacts, recorded_facts, spec_facts
from runs.method.outcome import Check
from runs.method.run_checks import Samples, run_checks
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


def method_columns(run: Run) -> tuple[str, bool | None]:
    """(memory_tier, durable) for a run whose results are being stored."""
    facts = recorded_facts(RunSpec.from_run(run), run.environment, run.metrics)
    return memory_tier(facts), not not_durable_because(facts)


def _measured_tps(run: Run) -> Samples:
    rows = RunSample.objects.filter(run=run, warmup=False).order_by("second").values_list("second", "tps")
    return [(float(second), tps) for second, tps in rows]


def _accepted_reasons(run: Run) -> dict[str, dict[str, str]]:
    return {key: entry for key, entry in run.method_overrides.items() if isinstance(entry, dict)}
