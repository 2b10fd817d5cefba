"""Numbers of fio baselines as pages show them, and a device's results by key."""

from typing import Any

from django import template

register = template.Library()


@register.filter
def fio_number(value: float | None) -> str:
    """Thousands whole (a 98 412 IOPS is not "98400"), small numbers to four significant digits
    (a 0.0213 ms latency does not read 0); a dash for a figure not measured."""
    if value is None:
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}".replace(",", "\u202f")
    return f"{value:.4g}"


@register.filter
def figure(figures: dict[str, Any], key: str) -> Any:
    """figures[key] in a template (a baseline's figures, a comparison row's)."""
    return figures.get(key) if figures else None


@register.filter
def split_words(text: str) -> list[str]:
    return text.split()
