"""The table the seeds publish, one row per group: the varied variable | avg ± stdev | min |
median | max of steady-state tps (seed 001: "bs  avg & stdev  min  median  max"), on the
campaign page, the comparison's page and report, and as a CSV or JSON export.

Its numbers are the comparison's own summaries (runs.compare.selectors.comparison, runs.compare.stats): nothing is
computed twice. Its first column is the grouping's label; a study of PostgreSQL installs whose
groups each ran one page size, all different, is a page-size study and reads "page size",
"2 kB", "4 kB", "8 kB" as the seed did.
"""

from dataclasses import dataclass
from typing import Any

from runs.compare.confounds import run_page_size
from runs.compare.query import Group, group_label
from runs.compare.selectors.comparison import ComparisonResult
from runs.compare.stats import Summary

METRIC = "steady_tps"
PAGE_SIZE_HEADING = "page size"
TABLE_COLUMNS = ("avg", "stdev", "min", "median", "max", "n")


@dataclass(frozen=True)
class ResultsRow:
    label: str
    summary: Summary


@dataclass(frozen=True)
class ResultsTable:
    heading: str  # the first column's: "page size", or the grouping fields that vary
    unit: str
    rows: list[ResultsRow]

    @property
    def runs_said(self) -> str:
        """ "n = 10 per page size", or each group's n when they differ."""
        counts = [row.summary.n for row in self.rows]
        if len(set(counts)) == 1:
            return f"n = {counts[0]} per {self.heading}"
        return "n = " + ", ".join(f"{count} ({row.label})" for count, row in zip(counts, self.rows, strict=True))


def _varying(result: ComparisonResult) -> list[str]:
    """The grouping fields whose values differ between the groups (the facet's are the panels)."""
    return [
        name
        for position, name in enumerate(result.query.grouping)
        if len({g.key[position] for g in result.groups}) > 1 and name != result.query.facet
    ]


def _page_sizes(groups: list[Group]) -> list[str] | None:
    """Each group's one page size, when every group ran one and no two the same."""
    sizes = [{run_page_size(run) for run in g.runs} for g in groups]
    if any(len(found) != 1 for found in sizes):
        return None
    shown = [found.pop() for found in sizes]
    return shown if len(set(shown)) == len(shown) else None


def _first_column(result: ComparisonResult) -> tuple[str, list[str]]:
    varying = _varying(result)
    if varying == ["pg_install_id"] and (sizes := _page_sizes(result.groups)):
        return PAGE_SIZE_HEADING, sizes
    heading = " · ".join(group_label(name) for name in varying) or "configuration"
    return heading, [f"{g.label} ({g.facet})" if g.facet else g.label for g in result.groups]


def results_table(result: ComparisonResult) -> ResultsTable | None:
    """The seed's table of the comparison's tps; None before any run has finished."""
    table = next((t for t in result.tables if t.metric.key == METRIC), None)
    if table is None:
        return None
    heading, labels = _first_column(result)
    by_group = {row.group.index: row.summary for row in table.rows}
    rows = [ResultsRow(label, by_group[g.index]) for g, label in zip(result.groups, labels, strict=True)]
    return ResultsTable(heading, table.metric.unit, rows)


def results_rows(table: ResultsTable) -> list[dict[str, Any]]:
    """The table as export rows, unrounded: its heading names the first column."""
    return [
        {
            table.heading: row.label,
            "avg": row.summary.mean,
            "stdev": row.summary.sd,
            "min": row.summary.minimum,
            "median": row.summary.median,
            "max": row.summary.maximum,
            "n": row.summary.n,
        }
        for row in table.rows
    ]
