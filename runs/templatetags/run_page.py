"""Filters for the run page (and any page that shows a run the same way): its workload in one
readable line, its times with their timezone, how long it took, the runs a wait names linked,
what a figure pgbench did not print says, and what its collapsed log holds."""

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django import template
from django.template.defaultfilters import date as format_date
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from runs.bench.selectors.run_page import LogPart
from runs.bench.spec_labels import spec_value
from runs.models import Driver, Run, RunState

register = template.Library()

STAMP_FORMAT = "Y-m-d H:i:s T"  # 24-hour time, and the timezone it is in


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


@register.filter
def workload_summary(run: Run) -> str:
    """The workload in one line: "TPC-B like · scale 10 · 8 clients · 2 threads · 5 s warm-up + 20 s · …"."""
    workload = run.get_workload_display().split(" (", 1)[0]  # "TPC-B like", without "(read/write)"
    if run.library_script_id:  # "skewed-zipfian v1 (skew 1.3)"
        params = spec_value(run, "workload_params", with_label=True)
        workload = f"{run.library_script} ({params})"
    seconds = f"{run.warmup_s} s warm-up + {run.duration_s} s" if run.warmup_s else f"{run.duration_s} s"
    if run.warmup_run_s:  # a separate pgbench first: "300 s warm-up run at 10 clients, then 300 s"
        seconds = f"{run.warmup_run_s} s warm-up run at {run.warmup_run_clients or run.clients} clients, then {seconds}"
    if run.driver == Driver.SYSBENCH:  # one thread per client, no scale, no query mode, no -i options
        parts = [workload, f"{_count(run.sysbench_tables, 'table')} × {run.sysbench_table_size:,} rows"]
        parts += [_count(run.clients, "client"), seconds]
        return " · ".join(parts + ([f"at most {run.rate_limit_tps:g} tps"] if run.rate_limit_tps else []))
    parts = [
        workload,
        f"scale {run.scale}",
        _count(run.clients, "client"),
        _count(run.threads, "thread"),
        seconds,
        f"{run.query_mode} protocol",
    ]
    if run.rate_limit_tps:
        parts.append(f"at most {run.rate_limit_tps:g} tps")
    # pgbench's own options, each named only when it is not pgbench's default (spec_labels' words).
    for name, default in (
        ("latency_limit_ms", None),
        ("partitions", 0),
        ("partition_method", ""),
        ("fillfactor", 100),
        ("unlogged_tables", False),
        ("foreign_keys", False),
        ("init_steps", ""),
    ):
        if getattr(run, name) != default:
            parts.append(spec_value(run, name, with_label=True))
    return " · ".join(parts)


@register.filter
def stamp(moment: datetime | None) -> SafeString | str:
    """A <time> in the current timezone, 24-hour, the timezone named: "2025-04-01 14:03:22 UTC"."""
    if moment is None:
        return "–"
    local = timezone.localtime(moment)
    return format_html('<time datetime="{}">{}</time>', local.isoformat(), format_date(local, STAMP_FORMAT))


@register.filter
def wall_seconds(run: Run) -> float | None:
    """From its worker's start to its end (or to now while it runs); None before it started."""
    if run.started_at is None:
        return None
    return ((run.finished_at or timezone.now()) - run.started_at).total_seconds()


@register.filter
def seconds_phrase(count: int | None) -> str:
    """1 -> "1 second", 8 -> "8 seconds"."""
    return _count(count or 0, "second")


@register.filter
def measured_seconds(chart: dict[str, Any]) -> int:
    """The seconds pgbench reported after the warm-up (a run's chart data,
    bench.selectors.run_page.run_chart_data):
    all of them for a run that ended as planned, those before pgbench was stopped for a cancelled one."""
    return sum(1 for warmup in chart.get("warmup", []) if not warmup)


@register.filter
def not_reported(run: Run) -> str:
    """What a results cell says of a figure pgbench did not print: a cancelled run's pgbench was
    stopped before its summary."""
    return "not reported (pgbench was stopped)" if run.state == RunState.CANCELLED else "not reported"


_RUN_MENTION = re.compile(r"\brun ([0-9]+)\b")


@register.filter
def link_runs(text: str) -> SafeString:
    """A wait or state text with each run it names linked to that run's page: "lab2 busy with
    run 19; 2 runs ahead" -> "lab2 busy with <a href="/runs/19/">run 19</a>; 2 runs ahead"."""
    parts = []
    position = 0
    for mention in _RUN_MENTION.finditer(text):
        parts.append(escape(text[position : mention.start()]))
        url = reverse("run-detail", args=[int(mention[1])])
        parts.append(format_html('<a href="{}">{}</a>', url, mention[0]))
        position = mention.end()
    parts.append(escape(text[position:]))
    return mark_safe("".join(parts))  # noqa: S308 - every part is escaped or built by format_html


@register.filter
def log_summary(parts: Sequence[LogPart]) -> str:
    """What a finished run's collapsed log holds, as each part's heading says it: "all of A and
    B", "the last lines of A and B", or per part when they differ."""
    titles = [part.title for part in parts]
    if not titles:
        return "none kept"
    if all(part.whole for part in parts):
        return f"all of {_and(titles)}"
    if not any(part.whole for part in parts):
        return f"the last lines of {_and(titles)}"
    return _and([f"{part.title}: {'all of it' if part.whole else f'its last {part.lines} lines'}" for part in parts])


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
