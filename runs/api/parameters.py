"""Query-string parameters of the API, read with runs.common.params' checks: a bad one is a 400."""

from collections.abc import Callable
from typing import TypeVar

from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from runs.common.params import BadParameter

Value = TypeVar("Value")


def query_parameter(request: Request, name: str, parse: Callable[[str, str], Value]) -> Value | None:
    """`?name=` parsed by `parse(raw, name)`; None when absent or empty."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    try:
        return parse(raw, name)
    except BadParameter as exc:
        raise ValidationError({name: [str(exc)]}) from None
