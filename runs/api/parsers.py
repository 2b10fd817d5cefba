"""The one place every JSON body of the API is read: what no field of benchlab can take is
refused here with 400 and what is wrong, before any view or serializer sees it.

Each of these was a server error somewhere behind the parser: a body nested so deep that
json's decoder gives up (RecursionError, not a ValueError DRF turns into 400); a NUL, which
PostgreSQL's text and JSON cannot store; a lone surrogate, which cannot be written as UTF-8 (an
error message repeating the value could not be rendered); a number past a float's range, read as
infinity; and a body that is not an object, which every action of the API reads as one.
"""

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

MAX_DEPTH = 32  # the deepest body the API takes is 5 levels (a campaign's variable's value list)
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class CheckedJSONParser(JSONParser):
    """DRF's JSON parser, refusing what no field takes (see the module's docstring)."""

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = get_encoding(parser_context or {})
        try:  # DRF hands JSON parsers request.body: Django refuses one past DATA_UPLOAD_MAX_MEMORY_SIZE
            data = json.loads(stream.read().decode(encoding), parse_constant=_no_constant if self.strict else None)
        except RecursionError:
            raise ParseError(f"JSON nested too deep: the API takes at most {MAX_DEPTH} levels.") from None
        except (ValueError, LookupError) as exc:  # not JSON, not in its encoding, or an unknown encoding
            raise ParseError(f"JSON parse error - {exc}") from None
        if not isinstance(data, dict):
            raise ParseError(f"The body must be a JSON object ({{...}}), not {_json_type(data)}.")
        if problem := _first_problem(data):
            raise ParseError(problem)
        return data


def _json_type(value: Any) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON: give a number")


def _first_problem(data: Any) -> str | None:
    """What is wrong with the first value no field can take (with where it is), or None."""
    for where, depth, value in _walk(data):
        if depth > MAX_DEPTH:
            return f"JSON nested too deep at {where}: the API takes at most {MAX_DEPTH} levels."
        if isinstance(value, str) and (found := UNSTORABLE.search(value)):
            if found.group() == "\x00":
                return f"{where} holds a NUL character (\\u0000), which no field of benchlab accepts."
            return f"{where} holds a lone surrogate ({found.group()!r}): text must be valid Unicode (UTF-8)."
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where} is a number too large for the API (it reads as infinity)."
    return None


def _shown(key: str) -> str:
    """A key as a message may repeat it: what cannot be stored or rendered written as an escape."""
    return UNSTORABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", key[:40])


def _walk(data: Any) -> Iterator[tuple[str, int, Any]]:
    """Every value and key of `data` with where it is ("variables[0].values[1]") and its depth,
    without recursion (a body the decoder took may still be deeper than Python's stack likes)."""
    pending: list[tuple[str, int, Any]] = [("the body", 1, data)]
    while pending:
        where, depth, value = pending.pop()
        yield where, depth, value
        if depth > MAX_DEPTH:
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                inner = _shown(key) if where == "the body" else f"{where}.{_shown(key)}"
                pending.append((f"a key of {where}", depth, key))
                pending.append((inner, depth + 1, item))
        elif isinstance(value, list):
            pending.extend((f"{where}[{index}]", depth + 1, item) for index, item in enumerate(value))


__all__ = ["MAX_DEPTH", "CheckedJSONParser"]
