"""Form fields that filters and forms share: an inventory row by id, a day, a choice; each
refuses a bad value with what is allowed, in the same words on the page and in the API. And a
select list whose options say something about their row."""

from collections.abc import Callable
from datetime import date
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet

from runs.common.params import is_id


class InventoryChoiceField(forms.ModelChoiceField):
    """A row picked by id from a select list. Anything that is not an id is refused before it
    reaches a query (int() takes "١٢", PostgreSQL refuses numbers past bigint)."""

    def __init__(
        self, queryset: QuerySet[Any], what: str, label: str, empty_label: str = "", widget: Any = None
    ) -> None:
        super().__init__(
            queryset,
            required=False,
            label=label,
            empty_label=empty_label or f"any {what}",
            error_messages={"invalid_choice": f"no {what} has id %(value)s; pick one from the list"},
            widget=widget,
        )
        self.what = what

    def to_python(self, value: Any) -> Model | None:
        if value in self.empty_values:
            return None
        if not is_id(str(value)):
            raise ValidationError(
                f"must be the id of a {self.what}, a whole number; pick one from the list", code="invalid_choice"
            )
        return super().to_python(value)


def choice_field(label: str, choices: list[tuple[str, str]]) -> forms.ChoiceField:
    allowed = ", ".join(value for value, _ in choices)
    return forms.ChoiceField(
        label=label,
        required=False,
        choices=[("", "any"), *choices],
        error_messages={"invalid_choice": f"must be one of {allowed}"},
    )


class DayField(forms.DateField):
    """A day as YYYY-MM-DD (what a date input sends). A refusal repeats what was sent: the
    browser's date input cannot show a day that does not exist, such as 2025-02-30."""

    input_formats = ["%Y-%m-%d"]
    widget = forms.DateInput(format="%Y-%m-%d", attrs={"type": "date"})

    def to_python(self, value: Any) -> date | None:
        try:
            return super().to_python(value)
        except ValidationError:
            shown = str(value) if len(str(value)) <= 20 else f"{str(value)[:20]}..."
            raise ValidationError(
                f"must be a day written YYYY-MM-DD, e.g. 2025-03-31, not {shown!r}", code="invalid"
            ) from None


def day_said(day: date) -> str:
    """A day as nobody can misread it, whichever order the browser's date input shows (11/20/2026
    in one locale, 20/11/2026 in another): "20 Nov 2026"."""
    return f"{day.day} {day:%b %Y}"


class RowSelect(forms.Select):
    """A select of inventory rows whose options carry data-* attributes about their row (whose
    host it is, its size, ...), so the page can narrow and explain the lists (static/js/run_form.js)
    without asking the server again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.option_data: Callable[[Any], dict[str, str]] = lambda row: {}

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(*args, **kwargs)
        row = getattr(option["value"], "instance", None)  # a ModelChoiceIteratorValue; "" for the blank
        if row is not None:
            option["attrs"].update(self.option_data(row))
        return option
