"""The units filters of the pages' templates: the formatting of runs.common.units, which forms,
checks and comparisons use too; and p-values as the statistics write them."""

from django import template

from runs.common import units
from runs.compare.stats import format_p

register = template.Library()

for name in (
    "duration",
    "signed_pct",
    "percent",
    "binary_size",
    "page_size",
    "pg_settings_shown",
    "buffers_written",
    "metric_title",
):
    register.filter(name, getattr(units, name))


@register.filter
def p_value(p: object) -> str:
    """0.0412 -> "0.041"; 0.00002 -> "< 0.001" (runs.compare.stats.format_p without its "p = "); no p
    (none computed, or no comparison at all: the template gives "") -> a dash."""
    if not isinstance(p, int | float):
        return "–"
    return format_p(p).removeprefix("p = ").removeprefix("p ")
