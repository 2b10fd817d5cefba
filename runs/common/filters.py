"""What every filter of the site and the API shares (django-filter underneath): a parameter that
cannot be used is refused with what is allowed, never dropped. A user who asked for one campaign's
runs and got every run would take them for the answer.

A filter's form field is given whole (FieldFilter), so the page and the API say the same thing
about the same bad value; the parameters a filter set does not own but its page or list reads
(paging, sorting) are `also_allowed`, and checked by whoever reads them.
"""

from collections.abc import Iterable, Mapping
from typing import Any

import django_filters  # type: ignore[import-untyped]  # no stubs of its own
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet


def unknown_parameters(query: Mapping[str, Any], allowed: Iterable[str], where: str) -> str | None:
    """Why the query cannot be answered because it names parameters nobody here reads; None if it does not."""
    allowed = tuple(allowed)
    unknown = sorted(set(query) - set(allowed))
    if not unknown:
        return None
    shown = ", ".join(repr(name[:40]) for name in unknown[:5])
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    takes = ", ".join(allowed) if allowed else "no parameters"
    noun = "parameter" if len(unknown) == 1 else "parameters"
    return f"Unknown {noun} {shown}{more}: {where} takes {takes}."


def repeated_parameters(query: Any, names: Iterable[str]) -> list[str]:
    """The parameters given more than once (a QueryDict's lists); a plain mapping repeats none."""
    if not hasattr(query, "getlist"):
        return []
    return [name for name in names if len(query.getlist(name)) > 1]


class StrictFilterForm(forms.Form):
    """The form django-filter builds a filter set's fields on: refuses unknown and repeated parameters."""

    also_allowed: tuple[str, ...] = ()  # set by the filter set: what its page or list reads besides
    where = "this list"

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        own = [name for name in self.fields if name not in self.also_allowed]
        refusal = unknown_parameters(self.data, [*own, *self.also_allowed], self.where)
        if refusal:
            raise ValidationError(refusal, code="unknown_parameter")
        for name in repeated_parameters(self.data, self.fields):
            self.add_error(name, "is given more than once; give it once")
        return cleaned


class StrictFilterSet(django_filters.FilterSet):
    """A filter set whose bad, unknown or repeated parameters are errors (its form's), and whose
    form may carry fields that are not filters (a page's sort and paging)."""

    also_allowed: tuple[str, ...] = ()
    where = "this list"

    class Meta:
        form = StrictFilterForm

    @property
    def form(self) -> forms.Form:
        form = super().form
        if isinstance(form, StrictFilterForm):
            form.also_allowed, form.where = self.also_allowed, self.where
        return form

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """The filters only: django-filter's own would take every field of the form for one."""
        cleaned = self.form.cleaned_data
        for name, filter_ in self.filters.items():
            queryset = filter_.filter(queryset, cleaned.get(name))
        return queryset

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        return tuple(cls.base_filters)


class FieldFilter(django_filters.Filter):
    """A filter on `field_name` (or by `method`) whose form field is the one given, with its own
    label, checks and messages."""

    def __init__(self, field: forms.Field, field_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(field_name=field_name, label=field.label, **kwargs)
        self._field = field
