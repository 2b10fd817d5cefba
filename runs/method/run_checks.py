"""The method checks of one run, in the order the Method panel lists them.

Each check reads MethodFacts (and, for stability, the per-second tps) and returns a Check. Before a
run has run, the same checks read what it asks for (facts.measured is False): those that need a
measurement say so instead of guessing.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from runs.compare.stats import trend
from runs.method.facts import BRANCH_LOCKING, MethodFacts
from runs.method.outcome import Check, Status
from runs.method.tiers import (
    DURABILITY_SETTINGS,
    FITS_RAM,
    FITS_SHARED_BUFFERS,
    NO_BARRIER_OPTIONS,
    memory_tier,
    not_durable_because,
    tier_figures,
)

MIN_CHECKPOINT_TIMEOUT_S = 30
CHECKPOINT_CYCLES = 2  # a write run shorter than two checkpoint_timeouts depends on where they fell
DRIFT_LIMIT = 0.20  # a steady rise or fall of tps by more than this share over the window
DRIFT_P = 0.01  # ... that a straight line explains beyond chance
CHECKPOINT_DIP = 0.80  # tps during checkpoints below this share of the rest: "swings with checkpoints"
BUSY_LOAD_SHARE = 0.5  # load average above half the CPUs before the window: something else ran
BUSY_PROCESS_PCT = 20.0  # another process taking a fifth of a CPU during the window

Samples = Sequence[tuple[float, float]]  # (second, tps) of the measured window


def check_memory(facts: MethodFacts) -> Check:
    tier, figures = memory_tier(facts), tier_figures(facts)
    title = "Memory tier"
    if not tier:
        return Check(
            "memory", title, Status.NOT_RECORDED, f"the database's size or the host's RAM is unknown ({figures})"
        )
    reason = f"{tier}: {figures}" + ("" if facts.measured else " (estimated from the scale)")
    if tier in (FITS_SHARED_BUFFERS, FITS_RAM):
        advice = "to measure the device, use a scale whose database exceeds the host's RAM"
        return Check("memory", title, Status.WARNING, f"{reason}: reads come from memory, not the device", advice)
    return Check("memory", title, Status.PASSED, reason)


def check_contention(facts: MethodFacts) -> Check:
    title = "Branch-row contention"
    if facts.custom_script or facts.workload not in BRANCH_LOCKING:
        return Check("contention", title, Status.NOT_APPLICABLE, f"{facts.workload} updates no pgbench_branches row")
    if facts.scale < facts.branch_contenders:
        return Check(
            "contention",
            title,
            Status.WARNING,
            f"{facts.branch_contenders} clients share scale {facts.scale}'s {facts.scale} branch rows: "
            "the run measures row-lock waits, not the storage (pgbench's documentation)",
            f"raise the scale to at least {facts.branch_contenders}, or use fewer clients",
        )
    return Check("contention", title, Status.PASSED, f"scale {facts.scale} ≥ {facts.branch_contenders} clients")


def check_length(facts: MethodFacts) -> Check:
    title = "Run length"
    if facts.writes is False:
        return Check("length", title, Status.NOT_APPLICABLE, f"{facts.workload} writes nothing to checkpoint")
    timeout = facts.checkpoint_timeout_s
    if timeout is None:
        return Check("length", title, Status.NOT_RECORDED, "checkpoint_timeout is unknown")
    needed = CHECKPOINT_CYCLES * timeout
    if facts.duration_s < needed:
        return Check(
            "length",
            title,
            Status.WARNING,
            f"{facts.duration_s} s measured, shorter than {CHECKPOINT_CYCLES} × checkpoint_timeout ({timeout:g} s): "
            "the result depends on whether a checkpoint fell inside the window",
            _length_advice(facts.duration_s, needed),
        )
    return Check("length", title, Status.PASSED, f"{facts.duration_s} s ≥ {CHECKPOINT_CYCLES} × {timeout:g} s")


def _length_advice(duration_s: int, needed: float) -> str:
    shorter = duration_s // CHECKPOINT_CYCLES
    if shorter < MIN_CHECKPOINT_TIMEOUT_S:  # PostgreSQL refuses less
        return f"measure at least {needed:g} s"
    return f"measure at least {needed:g} s, or lower checkpoint_timeout to {shorter} s or less"


def check_checkpoints(facts: MethodFacts) -> Check:
    title = "Checkpoints"
    if not facts.measured:
        return Check("checkpoints", title, Status.NOT_APPLICABLE, "counted while the run measures")
    counts = facts.checkpoints
    if counts is None:
        return Check("checkpoints", title, Status.NOT_RECORDED, "the run recorded no checkpoint counts")
    timed, requested = int(counts.get("timed") or 0), int(counts.get("requested") or 0)
    reason = f"{timed} timed and {requested} requested during the window"
    if requested:
        return Check(
            "checkpoints",
            title,
            Status.WARNING,
            f"{reason}: WAL filled max_wal_size ({facts.settings.get('max_wal_size', '?')}) and forced them",
            "raise max_wal_size so that checkpoints come from checkpoint_timeout, as in production",
        )
    return Check("checkpoints", title, Status.PASSED, reason)


def check_durability(facts: MethodFacts) -> Check:
    reasons = not_durable_because(facts)
    if reasons:
        off = [name for name in DURABILITY_SETTINGS if facts.settings.get(name) == "off"]
        changes = [f"turn {' and '.join(off)} on"] if off else []
        changes += [f"mount without {option}" for option in facts.mount_options if option in NO_BARRIER_OPTIONS]
        changes += ["load logged tables"] if facts.unlogged_tables else []
        return Check(
            "durability",
            "Durability",
            Status.WARNING,
            "not durable: " + "; ".join(reasons),
            ", ".join(changes) + ", or compare it only with runs that are not durable either, and say so",
        )
    durable = "fsync, synchronous_commit and full_page_writes on; the filesystem flushes"
    return Check("durability", "Durability", Status.PASSED, durable)


def check_state(facts: MethodFacts) -> Check:
    title = "State before measuring"
    state = facts.state
    if not state:
        return Check("state", title, Status.NOT_RECORDED, "the run recorded no cache or data state")
    said = "" if facts.measured else " (as asked)"
    reason = f"{state.get('cache', '?')} cache, {state.get('data', '?')} data{said}"
    if not state.get("checkpoint_before"):
        return Check(
            "state",
            title,
            Status.WARNING,
            f"{reason}; no CHECKPOINT before measuring: the load's dirty pages are written inside the window",
            "keep the CHECKPOINT before measuring (the default)",
        )
    settle = state.get("settle_s")
    pause = f" and up to {settle:g} s for a quiet device" if settle else ""
    return Check("state", title, Status.PASSED, f"{reason}; CHECKPOINT{pause} before measuring")


def check_seed(facts: MethodFacts) -> Check:
    if facts.random_seed is None:
        if not facts.measured:
            return Check("seed", "Random seed", Status.PASSED, "benchlab picks one when the run is queued")
        return Check("seed", "Random seed", Status.NOT_RECORDED, "the run recorded no --random-seed")
    return Check("seed", "Random seed", Status.PASSED, f"--random-seed={facts.random_seed}: Run again repeats it")


def check_host(facts: MethodFacts) -> Check:
    title = "The host as it was"
    if not facts.measured:
        return Check("host", title, Status.NOT_APPLICABLE, "read from the host when the run measures")
    if not facts.host and not facts.during and not facts.during_clients:
        return Check("host", title, Status.NOT_RECORDED, "the run recorded no CPU settings or load")
    found = tuning_against(facts.host) + _busy_hosts(facts)
    if found:
        return Check(
            "host",
            title,
            Status.WARNING,
            "; ".join(found),
            "set the performance governor, turn boost off and run on otherwise idle hosts",
        )
    clients = " on the server or its client hosts" if facts.during_clients else ""
    return Check("host", title, Status.PASSED, f"no powersave governor, no boost, nothing else busy{clients}")


def _busy_hosts(facts: MethodFacts) -> list[str]:
    """What else kept the server and each client host busy around the window, the clients named."""
    clients = sorted(facts.during_clients.items())
    return busy_during(facts.during) + [
        f"client host {name}: {said}" for name, during in clients if isinstance(during, Mapping)
        for said in busy_during(during)
    ]  # fmt: skip


def check_stability(facts: MethodFacts, samples: Samples) -> Check:
    title = "Stability"
    if not facts.measured:
        return Check("stability", title, Status.NOT_APPLICABLE, "read from the run's per-second tps")
    if len(samples) < 10:
        return Check("stability", title, Status.NOT_RECORDED, f"{len(samples)} per-second samples: too few to tell")
    found = [*_drift(samples), *_checkpoint_swing(facts, samples)]
    if found:
        # Noise with a visible cause: what else was busy is said here too, not only under the host's check.
        busy = _busy_hosts(facts)
        meanwhile = f" (meanwhile {'; '.join(busy)})" if busy else ""
        return Check(
            "stability", title, Status.WARNING, "; ".join(found) + meanwhile, "measure longer, until tps settles"
        )
    return Check("stability", title, Status.PASSED, "tps holds steady over the window")


def run_checks(
    facts: MethodFacts, samples: Samples = (), accepted: Mapping[str, Mapping[str, str]] | None = None
) -> list[Check]:
    """Every check of one run, with who accepted its warnings and why ({key: {"reason", "by"}},
    as Run.method_overrides holds them)."""
    checks: list[Callable[[MethodFacts], Check]] = [
        check_memory,
        check_contention,
        check_length,
        check_checkpoints,
        check_durability,
        check_state,
        check_seed,
        check_host,
    ]
    found = [check(facts) for check in checks] + [check_stability(facts, samples)]
    return [_with_acceptance(check, accepted or {}) for check in found]


def _with_acceptance(check: Check, accepted: Mapping[str, Mapping[str, str]]) -> Check:
    entry = accepted.get(check.key) or {}
    if check.status != Status.WARNING or not entry.get("reason"):
        return check
    return replace(check, accepted=str(entry["reason"]), accepted_by=str(entry.get("by", "")))


def against_stable_numbers(host: Mapping, during: Mapping, load_when: str = "before the window") -> list[str]:
    """What on a host is set against stable numbers (the Phoronix Test Suite's list): a governor that
    lowers the clock, boost, a load or another busy process."""
    return tuning_against(host) + busy_during(during, load_when)


def tuning_against(host: Mapping) -> list[str]:
    """A governor that lowers the clock, or boost."""
    found = []
    if host.get("governor") in ("powersave", "ondemand", "conservative", "schedutil", "mixed"):
        found.append(f"CPU frequency governor {host['governor']}")
    if host.get("boost") is True:
        found.append("CPU boost (turbo) on: the clock follows temperature")
    return found


def busy_during(during: Mapping, load_when: str = "before the window") -> list[str]:
    """A load average above half the CPUs at the first sample, or another process that took a fifth of
    a CPU between the two."""
    found = []
    cpus, load = during.get("cpu_count") or 0, during.get("load_1m_start")
    if cpus and isinstance(load, int | float) and load > BUSY_LOAD_SHARE * cpus:
        found.append(f"load average {load:g} on {cpus} CPUs {load_when}")
    busy = [p for p in during.get("busiest") or () if (p.get("cpu_pct") or 0) >= BUSY_PROCESS_PCT]
    found += [f"{p.get('command', '?')} (PID {p.get('pid', '?')}) took {p['cpu_pct']:.0f} % CPU" for p in busy]
    return found


def _drift(samples: Samples) -> list[str]:
    line = trend([second for second, _ in samples], [tps for _, tps in samples])
    if line is None or abs(line.change) <= DRIFT_LIMIT or line.p >= DRIFT_P:
        return []
    return [f"tps {'fell' if line.change < 0 else 'rose'} steadily by {abs(line.change):.0%} over the window"]


def _checkpoint_swing(facts: MethodFacts, samples: Samples) -> list[str]:
    events = (facts.checkpoints or {}).get("events") or ()
    spans = [(e["second"], e["second"] + (e.get("duration_s") or 1)) for e in events if "second" in e]
    inside = [t for s, t in samples if any(start <= s <= end for start, end in spans)]
    outside = [t for s, t in samples if not any(start <= s <= end for start, end in spans)]
    if not inside or not outside:
        return []
    ratio = (sum(inside) / len(inside)) / (sum(outside) / len(outside) or 1)
    if ratio < CHECKPOINT_DIP:
        return [f"tps during checkpoints was {ratio:.0%} of the rest"]
    return []
