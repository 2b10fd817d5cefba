"""A page of a list asked by number: a number past the end answers the last page with a notice
saying so (a bookmarked ?page=9 of a list that has shrunk still shows something), a page that is
not a number is refused naming what is allowed (runs.common.params.BadParameter)."""

from typing import Any

from django.core.paginator import EmptyPage, Page, Paginator

from runs.common.params import parse_whole_number

MAX_PAGE = 10**6  # a page number beyond any list benchlab keeps; larger is refused, not counted


def asked_page(raw: str | None) -> int:
    """The page number in ?page= (absent or empty: 1); raises BadParameter for anything but a
    whole number from 1 to MAX_PAGE."""
    return parse_whole_number(raw, "page", 1, MAX_PAGE) if raw else 1


def page_or_last(paginator: "Paginator[Any]", number: int, what: str = "items") -> "tuple[Page[Any], str | None]":
    """Page `number` of `paginator`, or its last page and a notice saying there is no such page
    (`what`: what the list holds, plural, for the notice: "change points")."""
    try:
        return paginator.page(number), None
    except EmptyPage:
        last = paginator.page(paginator.num_pages)  # page 1 of an empty list exists: Django allows it
    if paginator.count == 0:
        return last, f"There is no page {number}: there are no {what} to show; this is page 1, empty."
    if paginator.num_pages == 1:
        return last, f"There is no page {number}: these {what} fit on page 1, shown here."
    return last, f"There is no page {number}: these {what} fill pages 1 to {paginator.num_pages}; this is the last."
