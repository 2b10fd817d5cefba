"""Ids and choices from URLs and query strings, checked before they reach a query.

Python's `str.isdigit()` says yes to "²" and int() refuses 5,000 digits; PostgreSQL refuses
numbers past bigint. Each of these used to end as a 500. Here a bad value is the caller's
mistake, reported with what is allowed.
"""

import re
from collections.abc import Iterable

from django.urls import register_converter

MAX_ID = 2**63 - 1  # PostgreSQL's bigint, the type of every id
_ASCII_DIGITS = re.compile(r"[0-9]{1,19}")
EVENT_ID_PART_MAX = 2**64 - 1  # a Redis stream id is <milliseconds>-<sequence>, each at most this
_EVENT_ID = re.compile(r"([0-9]{1,20})(?:-([0-9]{1,20}))?")


class BadParameter(ValueError):
    """A query-string value that is not what the parameter takes; str() says what is allowed."""


def _shown(raw: str) -> str:
    return repr(raw if len(raw) <= 40 else raw[:40] + "…")


def is_id(raw: str) -> bool:
    return bool(_ASCII_DIGITS.fullmatch(raw)) and 1 <= int(raw) <= MAX_ID


def parse_id(raw: str, name: str) -> int:
    if not is_id(raw):
        raise BadParameter(f"{name} must be an id, a whole number from 1 to {MAX_ID}, not {_shown(raw)}")
    return int(raw)


def parse_whole_number(raw: str, name: str, low: int, high: int) -> int:
    if not _ASCII_DIGITS.fullmatch(raw) or not low <= int(raw) <= high:
        raise BadParameter(f"{name} must be a whole number from {low} to {high}, not {_shown(raw)}")
    return int(raw)


def parse_event_id(raw: str, name: str) -> str:
    """A live event's id, as Redis streams number them (where a stream resumes)."""
    match = _EVENT_ID.fullmatch(raw)
    if not match or any(int(part) > EVENT_ID_PART_MAX for part in match.groups("0")):
        raise BadParameter(
            f"{name} must be an event id such as 1700000000000-0 (two whole numbers up to {EVENT_ID_PART_MAX}), "
            f"not {_shown(raw)}"
        )
    return raw


def parse_choice(raw: str, name: str, choices: Iterable[str]) -> str:
    allowed = list(choices)
    if raw not in allowed:
        raise BadParameter(f"{name} must be one of {', '.join(allowed)}, not {_shown(raw)}")
    return raw


class IdConverter:
    """`<id:run_id>` in a URL: a number that can be an id, else the URL does not match (404)."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        if not is_id(value):
            raise ValueError(value)  # the resolver treats this as "no match"
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class NameConverter:
    """`<name:name>` for a raw output's name: letters, digits, dots, dashes, underscores."""

    regex = "[A-Za-z0-9._-]{1,100}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class DigestConverter(NameConverter):
    """`<digest:digest>`: an API token's key as knox stores it (the SHA-512 of the token, in hex),
    matched before it reaches a query (a NUL byte in a filter is a 500 in PostgreSQL)."""

    regex = "[0-9a-f]{128}"


register_converter(IdConverter, "id")
register_converter(DigestConverter, "digest")
register_converter(NameConverter, "name")
