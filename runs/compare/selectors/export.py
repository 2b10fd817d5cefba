"""The comparison as files: its summary table and the per-second series of its runs, as CSV or
JSON. The numbers are the page's own (runs.compare.selectors.comparison), unrounded."""

import csv
import io
from collections.abc import Iterator, Sequence
from typing import Any

from runs.bench.selectors.run_page import SAMPLE_EXTRAS
from runs.compare.results_table import TABLE_COLUMNS, results_rows, results_table
from runs.compare.selectors.comparison import ComparisonResult
from runs.models import Run, RunSample

SUMMARY_COLUMNS = (
    "metric", "unit", "group", "configuration", "driver", "baseline", "n", "mean", "sd", "minimum", "median",
    "maximum", "cv", "ci_low", "ci_high", "ratio", "ratio_ci_low", "ratio_ci_high", "difference_pct", "welch_p",
    "mann_whitney_p", "adjusted_p", "verdict", "confounded", "failed", "runs", "memory_tier", "durable", "origin",
)  # fmt: skip
# sysbench's per-second columns too, once the samples have them (runs.bench.selectors.run_page).
SERIES_COLUMNS = ("run", "group", "configuration", "driver", "second", "tps", "latency_ms", "warmup", *SAMPLE_EXTRAS)


def summary_rows(result: ComparisonResult) -> list[dict[str, Any]]:
    """One row per metric and group: the summary table, as the page shows it, unrounded."""
    rows = []
    for table in result.tables:
        for row in table.rows:
            comparison = row.comparison.as_json() if row.comparison else {}
            rows.append(
                {
                    "metric": table.metric.key,
                    "unit": table.metric.unit,
                    "group": row.group.index,
                    "configuration": row.group.label,
                    "driver": " / ".join(sorted({run.driver for run in row.group.runs})),
                    "baseline": row.group is result.baseline,
                    **row.summary.as_json(),
                    **{key: comparison.get(key) for key in SUMMARY_COLUMNS[15:23]},
                    "confounded": row.marker,  # "⚠ confounded: clients 4 vs 8": what the verdict mixes in
                    "failed": row.failed,
                    "runs": [pk for pk, _ in row.values],
                    **group_method_labels(row.group.runs),
                    # "measured", "imported" or both: imported runs (runs.imports) were measured elsewhere.
                    "origin": " / ".join(sorted({run.origin for run in row.group.runs})),
                }
            )
    return rows


def table_export(result: ComparisonResult) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """The seeds' results table (runs.compare.results_table) as an export's columns and rows: its
    first column is named by the grouping ("page size"). The campaign page's CSV and the API's."""
    table = results_table(result)
    heading = table.heading if table else "configuration"
    return (heading, *TABLE_COLUMNS), results_rows(table) if table else []


def group_method_labels(runs: Sequence[Run]) -> dict[str, str]:
    """A group's memory tiers and durability, from its runs' columns (runs.method fills them):
    "fits in RAM" (or "fits in RAM / exceeds RAM"); durable "yes", "no", "some" or "" when unknown."""
    tiers = sorted({run.memory_tier for run in runs if run.memory_tier})
    durable = {run.durable for run in runs if run.durable is not None}
    said = {frozenset({True}): "yes", frozenset({False}): "no", frozenset({True, False}): "some"}
    return {"memory_tier": " / ".join(tiers), "durable": said.get(frozenset(durable), "")}


def series_rows(result: ComparisonResult) -> Iterator[dict[str, Any]]:
    """Every per-second sample of every compared run, run by run."""
    group_of = {run.pk: group for group in result.groups for run in group.runs}
    driver_of = {run.pk: run.driver for group in result.groups for run in group.runs}
    read = ("run_id", "second", "tps", "latency_ms", "warmup", *SAMPLE_EXTRAS)
    samples = RunSample.objects.filter(run_id__in=list(group_of)).order_by("run_id", "second").values(*read)
    for sample in samples.iterator(chunk_size=5000):
        run_id = sample.pop("run_id")
        group = group_of[run_id]
        yield {"run": run_id, "group": group.index, "configuration": group.label, "driver": driver_of[run_id]} | sample


# A spreadsheet runs a cell starting with one of these as a formula (OWASP, "CSV Injection"):
# text from the inventory (an install's label, a host's or a device's name) reaches shared exports.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(text: str) -> str:
    """`text` as a cell a spreadsheet shows and never runs: a leading quote, as OWASP recommends,
    before text that would start a formula."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def _csv_value(value: Any) -> Any:
    """A cell. Only text is guarded: a number is written from an int or a float (repr: digits, a
    sign, '.', 'e', inf, nan), which a spreadsheet reads as that number, never a formula, and a
    quote would make -1.5 text that no sum or chart takes. Lists hold run ids."""
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(map(str, value))
    if isinstance(value, float):
        return repr(value)  # every digit: the file equals the JSON
    if isinstance(value, str):
        return spreadsheet_text(value)
    return value


def as_csv(rows: Iterator[dict[str, Any]] | list[dict[str, Any]], columns: tuple[str, ...]) -> Iterator[str]:
    """CSV text in pieces (a streamed response never holds every sample at once)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_value(row[column]) for column in columns])
        if buffer.tell() > 64_000:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
