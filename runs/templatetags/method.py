"""Filters for the Method panel (templates/runs/_method_panel.html)."""

from collections.abc import Iterable

from django import template

from runs.method.outcome import Check

register = template.Library()


@register.filter
def open_warnings(checks: Iterable[Check]) -> list[Check]:
    """The warnings nobody accepted."""
    return [check for check in checks if check.warns]
