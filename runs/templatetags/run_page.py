"""Filters for the run page (and any page that shows a run the same way): its workload in one
readable line, its times with their timezone, how long it took."""

from datetime import datetime

from django import template
from django.template.defaultfilters import date as format_date
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from runs.models import Run

register = template.Library()

STAMP_FORMAT = "Y-m-d H:i:s T"  # 24-hour time, and the timezone it is in


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


@register.filter
def workload_summary(run: Run) -> str:
    """The workload in one line: "TPC-B like · scale 10 · 8 clients · 2 threads · 5 s warm-up + 20 s · …"."""
    workload = run.get_workload_display().split(" (", 1)[0]  # "TPC-B like", without "(read/write)"
    seconds = f"{run.warmup_s} s warm-up + {run.duration_s} s" if run.warmup_s else f"{run.duration_s} s"
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
