"""A schedule's times: each bad crontab field refused naming it and what is allowed; the next
firing as celery reckons it. Pure: no database."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from runs.schedules.crontab import CRON_PRESETS, Crontab, crontab_errors, next_firing

GOOD = Crontab().as_dict()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("minute", "61", "The minute “61” is not allowed (Invalid end range: 61 > 59): write 0-59"),
        ("minute", "", "The minute is empty: write 0-59"),
        ("hour", "24", "The hour “24” is not allowed (Invalid end range: 24 > 23): write 0-23"),
        ("hour", "two", "The hour “two” is not allowed (not a number): write 0-23"),
        ("hour", "1 2", "The hour “1 2” is not one crontab field"),
        ("day_of_month", "0", "The day of month “0” is not allowed (Invalid beginning range: 0 < 1): write 1-31"),
        ("month_of_year", "13", "The month “13” is not allowed (Invalid end range: 13 > 12): write 1-12"),
        ("day_of_week", "8", "The day of week “8” is not allowed (Invalid end range: 8 > 6): write 0-6 (0 is Sunday)"),
        ("minute", "*/0", "The minute “*/0” is not allowed"),
        ("minute", "5-2", "The minute “5-2” is not allowed (Bad range '5-2')"),
    ],
)
def test_each_bad_field_is_named_with_what_is_allowed(field: str, value: str, says: str) -> None:
    errors = crontab_errors(GOOD | {field: value})

    assert list(errors) == [field]
    assert errors[field].startswith(says), errors[field]
    assert (
        errors[field].endswith("a list (1,15), a range (1-5), a step (*/15) or *.") or "without spaces" in errors[field]
    )


def test_every_bad_field_is_said_at_once() -> None:
    bad = {"minute": "60", "hour": "x", "day_of_month": "32", "month_of_year": "0", "day_of_week": "7"}

    assert set(crontab_errors(bad)) == set(bad)


@pytest.mark.parametrize(("day", "months"), [("31", "2"), ("30", "2"), ("31", "4,6,9,11")])
def test_times_that_never_come_together_are_refused(day: str, months: str) -> None:
    # Each field alone is good; celery found out only when beat asked, a 500 on the pages (review of issue 34).
    errors = crontab_errors(GOOD | {"day_of_month": day, "month_of_year": months})

    assert list(errors) == ["day_of_month"]
    assert errors["day_of_month"].startswith(f"These times never come (Invalid crontab: day_of_month '{day}' never")
    assert errors["day_of_month"].endswith("choose a day of month that the months have.")


@pytest.mark.parametrize(("day", "months"), [("29", "2"), ("31", "2,3"), ("30", "*")])
def test_times_that_come_in_some_month_or_year_pass(day: str, months: str) -> None:
    assert crontab_errors(GOOD | {"day_of_month": day, "month_of_year": months}) == {}


@pytest.mark.parametrize("values", [GOOD, {"minute": "*/15", "hour": "*", "day_of_month": "1,15",
                                            "month_of_year": "jan-mar", "day_of_week": "mon-fri"}])  # fmt: skip
def test_good_fields_pass(values: dict[str, str]) -> None:
    assert crontab_errors(values) == {}


def test_the_next_firing_is_celery_s_reckoning_in_the_site_s_zone() -> None:
    friday_evening = datetime(2026, 11, 27, 19, 55, 12, tzinfo=UTC)  # a Friday
    utc = ZoneInfo("UTC")

    assert next_firing(CRON_PRESETS["nightly"].crontab, friday_evening, utc) == datetime(2026, 11, 28, 2, 0, tzinfo=utc)
    assert next_firing(CRON_PRESETS["mondays"].crontab, friday_evening, utc) == datetime(2026, 11, 30, 2, tzinfo=utc)
    assert next_firing(Crontab(minute="*/15", hour="*"), friday_evening, utc) == datetime(2026, 11, 27, 20, tzinfo=utc)
    # At the very minute it fires, the next is the one after.
    at_two = datetime(2026, 11, 28, 2, 0, 0, tzinfo=UTC)
    assert next_firing(CRON_PRESETS["nightly"].crontab, at_two, utc) == datetime(2026, 11, 29, 2, 0, tzinfo=utc)
    paris = next_firing(CRON_PRESETS["nightly"].crontab, friday_evening, ZoneInfo("Europe/Paris"))
    assert paris.isoformat() == "2026-11-28T02:00:00+01:00"
