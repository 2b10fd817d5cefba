"""A schedule's name, checked alike by its form, the admin and the API: one line of at most
NAME_MAX printable characters. It heads each round's campaign ("<name> · round N") and the
subject of every email the schedule's subscribers get, where a line break is refused outright
(Django's BadHeaderError: every email of the schedule failed)."""

from django.core.exceptions import ValidationError

NAME_MAX = 150  # CampaignSchedule.name's column


def validate_schedule_name(name: str) -> None:
    if not name.isprintable():
        raise ValidationError("A schedule's name is one line of text, without line breaks, tabs or control characters.")
