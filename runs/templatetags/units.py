"""Template filters for units a lab engineer reads at a glance."""

from django import template

from runs.stats import format_p

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """1234.5 → "20 min 35 s"; 7500 → "2 h 5 min"; None → a dash."""
    if seconds is None:
        return "–"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


@register.filter
def signed_pct(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f} %"


@register.filter
def percent(fraction: float | None) -> str:
    """0.0123 → "1.2 %"."""
    return "–" if fraction is None else f"{fraction * 100:.1f} %"


_BINARY_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


@register.filter
def binary_size(size: int | None) -> str:
    """805306368 -> "768 MiB"; 25769803776 -> "24 GiB"; None -> a dash."""
    if size is None:
        return "–"
    value, unit = float(size), 0
    while value >= 1024 and unit < len(_BINARY_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.0f} {_BINARY_UNITS[unit]}" if unit == 0 or value >= 100 else f"{value:.3g} {_BINARY_UNITS[unit]}"


@register.filter
def p_value(p: object) -> str:
    """0.0412 -> "0.041"; 0.00002 -> "< 0.001" (runs.stats.format_p without its "p = "); no p
    (none computed, or no comparison at all: the template gives "") -> a dash."""
    if not isinstance(p, int | float):
        return "–"
    return format_p(p).removeprefix("p = ").removeprefix("p ")
