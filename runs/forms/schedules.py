"""The schedule form (a campaign's page and the schedule's page): a name and its times, a preset or
the five crontab fields, checked by runs.schedules.crontab (each bad field named)."""

from typing import Any

from django import forms
from django.conf import settings

from runs.schedules.crontab import CRON_FIELDS, CRON_PRESETS, Crontab, crontab_errors, crontab_of
from runs.schedules.names import NAME_MAX, validate_schedule_name

CUSTOM = "custom"


def crontab_field(name: str) -> forms.CharField:
    """One of the five crontab fields as the form shows it (its allowed values under it)."""
    field = next(field for field in CRON_FIELDS if field.name == name)
    return forms.CharField(
        label=field.label,
        required=False,
        max_length=field.max_length,
        initial=getattr(Crontab(), field.name),
        help_text=f"{field.allowed}, or *, 1,15, 1-5, */15",
        widget=forms.TextInput(attrs={"size": 8}),
    )


class ScheduleTimes(forms.Form):
    """A schedule's times: a preset, or the five crontab fields (checked only for a custom one)."""

    times = forms.ChoiceField(
        label="When",
        choices=[(key, preset.title) for key, preset in CRON_PRESETS.items()] + [(CUSTOM, "crontab (below)")],
        initial="nightly",
    )
    # Declared one by one (runs.schedules.crontab.CRON_FIELDS' names): the admin's form, a ModelForm,
    # takes only declared fields.
    minute = crontab_field("minute")
    hour = crontab_field("hour")
    day_of_month = crontab_field("day_of_month")
    month_of_year = crontab_field("month_of_year")
    day_of_week = crontab_field("day_of_week")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["times"].help_text = f"In {settings.TIME_ZONE}, the site's time zone."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("times") == CUSTOM:
            values = {field.name: data.get(field.name) or "" for field in CRON_FIELDS}
            for name, message in crontab_errors(values).items():
                self.add_error(name, message)
        return data

    def crontab(self) -> Crontab:
        """The times asked for (after is_valid())."""
        times = self.cleaned_data["times"]
        if times in CRON_PRESETS:
            return CRON_PRESETS[times].crontab
        return crontab_of(self.cleaned_data)


def times_initial(crontab: Crontab) -> dict[str, str]:
    """The times fields filled in with a schedule's own times."""
    preset = next((key for key, p in CRON_PRESETS.items() if p.crontab == crontab), CUSTOM)
    return {"times": preset} | crontab.as_dict()


class ScheduleForm(ScheduleTimes):
    name = forms.CharField(
        max_length=NAME_MAX,
        validators=[validate_schedule_name],
        help_text="Each round is a campaign named “<this> · round N”.",
    )
    field_order = ["name", "times"]

    @classmethod
    def of(cls, crontab: Crontab, name: str) -> "ScheduleForm":
        """The form filled in with a schedule's own name and times (its page's edit form)."""
        return cls(initial={"name": name} | times_initial(crontab))
