"""The schedule form (a campaign's page and the schedule's page): a name and its times, a preset or
the five crontab fields, checked by runs.schedules.crontab (each bad field named)."""

from typing import Any

from django import forms
from django.conf import settings

from runs.schedules.crontab import CRON_FIELDS, CRON_PRESETS, Crontab, crontab_errors, crontab_of

CUSTOM = "custom"


class ScheduleForm(forms.Form):
    name = forms.CharField(max_length=150, help_text="Each round is a campaign named “<this> · round N”.")
    times = forms.ChoiceField(
        label="When",
        choices=[(key, preset.title) for key, preset in CRON_PRESETS.items()] + [(CUSTOM, "crontab (below)")],
        initial="nightly",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        default = Crontab()
        for field in CRON_FIELDS:
            self.fields[field.name] = forms.CharField(
                label=field.label,
                required=False,
                max_length=field.max_length,
                initial=getattr(default, field.name),
                help_text=f"{field.allowed}, or *, 1,15, 1-5, */15",
                widget=forms.TextInput(attrs={"size": 8}),
            )
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

    @classmethod
    def of(cls, crontab: Crontab, name: str) -> "ScheduleForm":
        """The form filled in with a schedule's own name and times (its page's edit form)."""
        preset = next((key for key, p in CRON_PRESETS.items() if p.crontab == crontab), CUSTOM)
        return cls(initial={"name": name, "times": preset} | crontab.as_dict())
