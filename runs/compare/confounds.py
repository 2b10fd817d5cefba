"""What a comparison mixes into its verdicts besides the grouping, said where it is read: a warning
per confounded fact at the top of the page (naming it and the groups), the page-size sentence
when builds differ in more than their page size, and a marker on each verdict it touches.

A confounded fact (runs.compare.differences.Difference.confounded) varies inside a group, or differs
between groups without the grouping explaining it: "slower -95 %" between two devices means
nothing if one device's runs had 8 clients and the other's 4.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from runs.common.units import page_size
from runs.compare.differences import BUILD_FACTS, PAGE_SIZE, Difference, run_origin, short_version
from runs.compare.query import Group
from runs.models import Run

BUILD_WORDS = {"pg_version": "version", "build": "build", "wal_block_size": "WAL block size"}
BUILD_WORDS["pgbench_version"] = "pgbench version"
SHORT_VALUES = 24  # characters of two values a marker shows; longer ones are in its title


@dataclass(frozen=True)
class Confound:
    """One fact mixed into one group's comparison with the baseline."""

    short: str  # "clients 4 vs 8", for the marker
    detail: str  # "clients: 4 here, 8 in the baseline", for its title


def _group_name(group: Group) -> str:
    return f"group {group.index} (“{group.label}”)"


def _warning(difference: Difference, groups: Sequence[Group]) -> str:
    parts = []
    if difference.between and not difference.explained:
        shown = "; ".join(f"{_group_name(g)}: {cell}" for g, cell in zip(groups, difference.cells, strict=True))
        parts.append(f"{difference.label} differs between groups and the grouping does not explain it ({shown})")
    if difference.varies_within:
        inside = " and ".join(f"{_group_name(groups[i])} ({difference.cells[i]})" for i in difference.varies_within)
        parts.append(f"{difference.label} varies inside {inside}: its runs did not all run alike")
    return "; ".join(parts)


def run_page_size(run: Run) -> str:
    recorded = getattr(run, "env_block_size", None)  # as the server said (runs.compare.differences annotates it)
    return page_size(int(recorded) if recorded else run.pg_install.block_size)


def _run_build(run: Run) -> str:
    recorded = getattr(run, "env_pg_version", None)
    version = short_version(recorded) if recorded else f"PostgreSQL {run.pg_install.version}"
    return f"{version}, {run_origin(run)}"


def page_size_warning(differences: Sequence[Difference], groups: Sequence[Group]) -> str | None:
    """ "These page sizes come from different builds: 4 kB is …; 8 kB is …: version and build
    differ, not only the page size", when the groups' page sizes differ and so does anything
    else an install fixes; None otherwise."""
    by_key = {d.key: d for d in differences}
    if PAGE_SIZE not in by_key or not by_key[PAGE_SIZE].between:
        return None
    mixed = [BUILD_WORDS[key] for key in BUILD_FACTS if key in by_key and by_key[key].confounded]
    if not mixed:
        return None
    builds: dict[str, list[str]] = {}
    for run in (run for group in groups for run in group.runs):
        found = builds.setdefault(run_page_size(run), [])
        if (build := _run_build(run)) not in found:
            found.append(build)
    said = "; ".join(f"{size} is {' or '.join(found)}" for size, found in builds.items())
    what = ", ".join(mixed[:-1]) + (" and " if len(mixed) > 1 else "") + mixed[-1]
    verb = "differ" if len(mixed) > 1 else "differs"
    return f"These page sizes come from different builds: {said}: {what} {verb}, not only the page size."


def driver_warning(groups: Sequence[Group]) -> str | None:
    """ "These runs used different drivers …" when pgbench and sysbench runs are compared: each
    counts its own transactions, so their tps are different units; None otherwise."""
    by_driver: dict[str, list[str]] = {}
    for group in groups:
        for driver in sorted({run.driver for run in group.runs}):
            by_driver.setdefault(driver, []).append(str(group.index))
    if len(by_driver) < 2:
        return None
    said = "; ".join(f"{driver}: group {', '.join(indexes)}" for driver, indexes in by_driver.items())
    return (
        f"These runs used different drivers ({said}): a transaction is each driver's own (pgbench's tpcb-like is "
        "5 statements, sysbench's oltp_read_write about 18 queries), so their tps are different units, not faster "
        "or slower; compare latency, or a driver's runs with its own."
    )


def comparison_warnings(differences: Sequence[Difference], groups: Sequence[Group]) -> list[str]:
    """Every confounded fact, naming it and the groups; the drivers' and the page-size sentences first."""
    warnings = [_warning(d, groups) for d in differences if d.confounded]
    page_sizes = page_size_warning(differences, groups)
    first = [warning for warning in (driver_warning(groups), page_sizes) if warning]
    return [*first, *warnings]


def group_confounds(differences: Sequence[Difference], group: int, baseline: int) -> list[Confound]:
    """What is mixed into group `group`'s verdict against `baseline` (both group indexes):
    facts that differ between the two without the grouping explaining them, and facts that
    vary inside either."""
    found = []
    for d in differences:
        if not d.confounded:
            continue
        here, there = d.cells[group], d.cells[baseline]
        if group != baseline and d.between and not d.explained and d.values[group] != d.values[baseline]:
            # "clients 4 vs 8" when short; a build's or a version's words stay in the title.
            short = f"{d.label} {here} vs {there}" if len(here) + len(there) <= SHORT_VALUES else f"{d.label} differs"
            found.append(Confound(short, f"{d.label}: {here} here, {there} in the baseline"))
        if group in d.varies_within:
            found.append(Confound(f"{d.label} varies inside this group", f"{d.label} varies inside this group: {here}"))
        if group != baseline and baseline in d.varies_within:
            found.append(Confound(f"{d.label} varies inside the baseline", f"{d.label} in the baseline: {there}"))
    return found


def marker_text(confounds: Sequence[Confound]) -> str:
    """The verdict's marker (page, report, exports): "⚠ confounded: clients 4 vs 8"."""
    return "⚠ confounded: " + "; ".join(c.short for c in confounds) if confounds else ""


def marker_title(confounds: Sequence[Confound]) -> str:
    """Its title: what the verdict mixes with the grouping, in full."""
    if not confounds:
        return ""
    return "Not only the grouping differs from the baseline: " + "; ".join(c.detail for c in confounds)
