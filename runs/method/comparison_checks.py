"""The method checks of a comparison: what makes its groups' difference mean something other than
what the grouping says. Pure: each group's runs' MethodFacts in, Checks out.

- a comparison of storage (devices, filesystems, mount or mkfs options) whose runs fit in RAM
  mostly measured the CPU and the page cache; groups in different memory tiers compare tiers;
- groups that differ in durability, in checkpoints during the window, or in the state before
  measuring compare that too;
- write runs shorter than two checkpoint cycles, as for one run.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runs.method.facts import MethodFacts
from runs.method.outcome import Check, Status
from runs.method.run_checks import CHECKPOINT_CYCLES
from runs.method.tiers import EXCEEDS_RAM, memory_tier, not_durable_because

STORAGE_FIELDS = frozenset({"device_id", "filesystem", "mount_options", "mkfs_options"})


@dataclass(frozen=True)
class GroupFacts:
    label: str
    runs: Sequence[MethodFacts]  # the group's runs that ran
    unsteady: int = 0  # of them, runs whose tps drifted or dipped with checkpoints (Run.steady False)


def comparison_checks(groups: Sequence[GroupFacts], grouping_varies: frozenset[str]) -> list[Check]:
    """Every check of a comparison whose groups differ in the spec fields `grouping_varies`."""
    ran = [group for group in groups if group.runs]
    if len(ran) < 2:
        return [Check("comparison", "Comparison", Status.NOT_APPLICABLE, "fewer than two groups have runs that ran")]
    return [
        check_tiers(ran, grouping_varies),
        check_durability(ran),
        check_checkpoints(ran),
        check_state(ran),
        check_length(ran),
        check_stability(ran),
    ]


def check_tiers(groups: Sequence[GroupFacts], grouping_varies: frozenset[str]) -> Check:
    title = "Memory tier"
    tiers = {group.label: sorted({memory_tier(run) for run in group.runs}) for group in groups}
    if any("" in found for found in tiers.values()):
        return Check("memory", title, Status.NOT_RECORDED, "some runs recorded no database size or RAM")
    named = "; ".join(f"{label}: {' / '.join(found)}" for label, found in tiers.items())
    in_memory = [label for label, found in tiers.items() if found != [EXCEEDS_RAM]]
    if in_memory and grouping_varies & STORAGE_FIELDS:
        return Check(
            "memory",
            title,
            Status.WARNING,
            f"this compares storage, but {_count(in_memory, 'group')} fit in memory ({named}): "
            "it mostly measured the CPU and the page cache",
            "compare at a scale whose database exceeds the hosts' RAM",
        )
    if len({tuple(found) for found in tiers.values()}) > 1:
        return Check(
            "memory", title, Status.WARNING, f"the groups are in different tiers ({named})", "compare like tiers"
        )
    return Check("memory", title, Status.PASSED, f"every group: {next(iter(tiers.values()))[0]}")


def check_durability(groups: Sequence[GroupFacts]) -> Check:
    title = "Durability"
    not_durable = [group.label for group in groups if any(not_durable_because(run) for run in group.runs)]
    if not not_durable:
        return Check("durability", title, Status.PASSED, "every run durable")
    if len(not_durable) == len(groups):
        return Check("durability", title, Status.WARNING, "no group is durable: say so wherever it is shown")
    return Check(
        "durability",
        title,
        Status.WARNING,
        f"not durable: {', '.join(not_durable)}; the others are: the difference includes what durability costs",
        "label it so, or compare durable runs",
    )


def check_checkpoints(groups: Sequence[GroupFacts]) -> Check:
    title = "Checkpoints"
    counts = {group.label: [run.checkpoints for run in group.runs] for group in groups}
    if any(count is None for found in counts.values() for count in found):
        return Check("checkpoints", title, Status.NOT_RECORDED, "some runs recorded no checkpoint counts")
    means = {label: _mean_checkpoints(found) for label, found in counts.items()}
    requested = [label for label, found in counts.items() if any(int(c.get("requested") or 0) for c in found if c)]
    said = ", ".join(f"{label} {timed:g} timed + {forced:g} requested" for label, (timed, forced) in means.items())
    if len({total for total in (sum(pair) for pair in means.values())}) > 1 or requested:
        forced = f"; WAL forced checkpoints in {', '.join(requested)}" if requested else ""
        return Check(
            "checkpoints",
            title,
            Status.WARNING,
            f"the groups' windows held different checkpoints (a run's mean: {said}){forced}",
            "measure long enough for the same number of checkpoints, and raise max_wal_size",
        )
    return Check("checkpoints", title, Status.PASSED, f"the same checkpoints in every group (a run's mean: {said})")


def check_state(groups: Sequence[GroupFacts]) -> Check:
    title = "State before measuring"
    states = {group.label: sorted({_state(run) for run in group.runs}) for group in groups}
    if any("" in found for found in states.values()):
        return Check("state", title, Status.NOT_RECORDED, "some runs recorded no cache or data state")
    if len({tuple(found) for found in states.values()}) > 1:
        named = "; ".join(f"{label}: {' / '.join(found)}" for label, found in states.items())
        return Check("state", title, Status.WARNING, f"the groups started from different states ({named})")
    return Check("state", title, Status.PASSED, f"every group: {next(iter(states.values()))[0]}")


def check_length(groups: Sequence[GroupFacts]) -> Check:
    title = "Run length"
    runs = [run for group in groups for run in group.runs if run.writes is not False]
    if not runs:
        return Check("length", title, Status.NOT_APPLICABLE, "no run writes")
    short = [
        run
        for run in runs
        if run.checkpoint_timeout_s and run.duration_s < CHECKPOINT_CYCLES * run.checkpoint_timeout_s
    ]
    if short:
        return Check(
            "length",
            title,
            Status.WARNING,
            f"{len(short)} of {len(runs)} write runs measured less than {CHECKPOINT_CYCLES} × checkpoint_timeout: "
            "their results depend on where checkpoints fell",
            "measure longer, or lower checkpoint_timeout",
        )
    return Check(
        "length", title, Status.PASSED, f"every write run measured {CHECKPOINT_CYCLES} checkpoint cycles or more"
    )


def check_stability(groups: Sequence[GroupFacts]) -> Check:
    title = "Stability"
    unsteady = [f"{group.unsteady} of {len(group.runs)} in {group.label}" for group in groups if group.unsteady]
    if unsteady:
        return Check(
            "stability",
            title,
            Status.WARNING,
            f"runs whose tps drifted or dipped with checkpoints: {'; '.join(unsteady)}",
            "measure longer, until tps settles, or leave those runs out",
        )
    return Check("stability", title, Status.PASSED, "no run's tps drifted or dipped with checkpoints")


def _mean_checkpoints(counts: Sequence[Mapping | None]) -> tuple[float, float]:
    timed = [int(c.get("timed") or 0) for c in counts if c is not None]
    forced = [int(c.get("requested") or 0) for c in counts if c is not None]
    return (sum(timed) / len(timed) if timed else 0.0, sum(forced) / len(forced) if forced else 0.0)


def _state(run: MethodFacts) -> str:
    state = run.state or {}
    return f"{state['cache']} cache, {state['data']} data" if "cache" in state and "data" in state else ""


def _count(labels: Sequence[str], noun: str) -> str:
    return f"{len(labels)} {noun}{'s' if len(labels) != 1 else ''}"
