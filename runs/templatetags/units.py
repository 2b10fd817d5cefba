"""Template filters for units a lab engineer reads at a glance."""

from django import template

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
