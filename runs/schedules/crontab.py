"""A schedule's times as five crontab fields, checked and read without a database: the form, the
API and the admin take the same fields, refused with the same messages.

A value must be one both of beat's readers accept: celery's own parser (what decides when beat
fires) and django_celery_beat's model validators (python-crontab's, run by the admin).
"""

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, tzinfo

from celery.schedules import ParseException, crontab_parser
from django.core.exceptions import ValidationError
from django_celery_beat import validators
from django_celery_beat.models import CrontabSchedule
from django_celery_beat.tzcrontab import TzAwareCrontab


@dataclass(frozen=True)
class CronField:
    name: str  # as CrontabSchedule names it
    label: str
    low: int
    high: int  # celery's parser: (max_ + min_ - 1)
    allowed: str  # what the message says may be written
    validator: Callable[[str], None]
    max_length: int  # CrontabSchedule's column


CRON_FIELDS = (
    CronField("minute", "minute", 0, 59, "0-59", validators.minute_validator, 240),
    CronField("hour", "hour", 0, 23, "0-23", validators.hour_validator, 96),
    CronField("day_of_month", "day of month", 1, 31, "1-31", validators.day_of_month_validator, 124),
    CronField("month_of_year", "month", 1, 12, "1-12", validators.month_of_year_validator, 64),
    CronField(
        "day_of_week", "day of week", 0, 6, "0-6 (0 is Sunday) or sun, mon, …", validators.day_of_week_validator, 64
    ),
)
FIELD_NAMES = tuple(field.name for field in CRON_FIELDS)


@dataclass(frozen=True)
class Crontab:
    """minute hour day-of-month month day-of-week, as written in a crontab."""

    minute: str = "0"
    hour: str = "2"
    day_of_month: str = "*"
    month_of_year: str = "*"
    day_of_week: str = "*"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def __str__(self) -> str:
        return " ".join(getattr(self, name) for name in FIELD_NAMES)


@dataclass(frozen=True)
class CronPreset:
    title: str
    crontab: Crontab


CRON_PRESETS = {
    "nightly": CronPreset("every night at 02:00", Crontab(minute="0", hour="2")),
    "mondays": CronPreset("Mondays at 02:00", Crontab(minute="0", hour="2", day_of_week="1")),
}


def _field_error(field: CronField, value: str) -> str | None:
    how = f"{field.allowed}, a list (1,15), a range (1-5), a step (*/15) or *"
    if not value:
        return f"The {field.label} is empty: write {how}."
    if len(value) > field.max_length or any(c.isspace() for c in value):
        return f"The {field.label} “{value[:40]}” is not one crontab field: write {how}, without spaces."
    try:
        if not crontab_parser(field.high - field.low + 1, field.low).parse(value):
            raise ValueError("no time")
        field.validator(value)
    except (ValueError, ParseException, ValidationError) as exc:
        reason = exc.messages[0] if isinstance(exc, ValidationError) else str(exc)
        if "weekday" in reason and field.name != "day_of_week":  # celery tries a name last
            reason = "not a number"
        return f"The {field.label} “{value[:40]}” is not allowed ({reason.rstrip('.')[:80]}): write {how}."
    return None


def crontab_errors(values: Mapping[str, str]) -> dict[str, str]:
    """{field name: what is wrong and what is allowed} for each bad field; {} when all are good."""
    errors = {}
    for field in CRON_FIELDS:
        if message := _field_error(field, str(values.get(field.name, "")).strip()):
            errors[field.name] = message
    if not errors and (never := _never_fires(crontab_of(values))):
        errors["day_of_month"] = never
    return errors


def _never_fires(schedule: Crontab) -> str | None:
    """Why times that are each allowed never come together ("31 2 *": no 31 February), or None.
    celery finds out only when beat asks when to fire next, and beat then skips the schedule."""
    try:
        next_firing(schedule, datetime.now(UTC), UTC)
    except ValueError as exc:
        return f"These times never come ({str(exc).rstrip('.')}): choose a day of month that the months have."
    return None


def crontab_of(values: Mapping[str, str]) -> Crontab:
    """The Crontab of checked values (crontab_errors gave {})."""
    return Crontab(**{name: str(values[name]).strip() for name in FIELD_NAMES})


def next_firing(schedule: Crontab, now: datetime, zone: tzinfo) -> datetime:
    """When beat fires next after `now`, in `zone` (celery's own reckoning)."""
    local = now.astimezone(zone)
    cron = TzAwareCrontab(**schedule.as_dict(), tz=zone)  # the class beat evaluates it with
    cron.nowfun = lambda: local
    return (local + cron.remaining_estimate(local)).replace(second=0, microsecond=0)


def crontab_of_row(row: CrontabSchedule) -> Crontab:
    """The times of beat's crontab row."""
    return Crontab(**{name: getattr(row, name) for name in FIELD_NAMES})
