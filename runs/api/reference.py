"""The API's reference page, read from its OpenAPI schema: sections of operations, and the shapes
(the schema's components) their bodies name. Pure: a schema dict in, dataclasses out; the page is
runs/views/api_reference.py and templates/runs/api_reference.html.

A type is a tuple of tokens (text, shape): a shape's name links to its table on the page, so a
nested body reads as "list of Run" with Run a link, never as raw JSON Schema.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Token = tuple[str, str]  # (text, the shape it links to, or "")
METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"


@dataclass(frozen=True)
class Field:
    name: str
    type: tuple[Token, ...]
    required: bool
    description: str


@dataclass(frozen=True)
class Body:
    status: str  # the response's code; "" for a request body
    description: str
    media_type: str  # "" when there is no body
    type: tuple[Token, ...]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    description: str
    deprecated: bool
    parameters: tuple[Field, ...]
    request: tuple[Body, ...]
    responses: tuple[Body, ...]


@dataclass(frozen=True)
class Section:
    tag: str
    operations: tuple[Operation, ...]


@dataclass(frozen=True)
class Shape:
    name: str
    description: str
    type: tuple[Token, ...]  # what it is when it is not an object with fields (an enum: its values)
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Reference:
    title: str
    version: str
    description: str
    sections: tuple[Section, ...]
    shapes: tuple[Shape, ...]


def type_tokens(schema: Mapping[str, Any]) -> tuple[Token, ...]:
    """How a field's type reads: "RunStateEnum", "list of integer", "Run or null", "object of integer"."""
    tokens = _bare_type(schema)
    if schema.get("nullable") and tokens != (("null", ""),):
        tokens = (*tokens, (" or null", ""))
    return tokens


def _bare_type(schema: Mapping[str, Any]) -> tuple[Token, ...]:
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF_PREFIX)
        return ((name, name),)
    for combined, word in (("allOf", " and "), ("oneOf", " or "), ("anyOf", " or ")):
        if combined in schema:
            tokens: list[Token] = []
            for index, part in enumerate(schema[combined]):
                tokens.extend([(word, "")] if index else [])
                tokens.extend(_bare_type(part))
            return tuple(tokens)
    if "enum" in schema:
        values = ", ".join("null" if value is None else repr(value) for value in schema["enum"])
        return ((f"one of {values}", ""),)
    kind = schema.get("type", "")
    if kind == "array":
        return (("list of ", ""), *_bare_type(schema.get("items", {})))
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        inner = _bare_type(schema["additionalProperties"])
        return (("object of ", ""), *inner) if inner != (("any", ""),) else (("object", ""),)
    if kind:
        return ((f"{kind} ({schema['format']})" if "format" in schema else kind, ""),)
    return (("any", ""),)


def unwrapped(text: str) -> str:
    """Text as its source wrapped it (a docstring's lines) in paragraphs that wrap on the page: a line
    break is kept only between paragraphs and before a "- " item."""
    return re.sub(r"(?<!\n)\n(?!\n|- )", " ", text.strip())


def fields_of(schema: Mapping[str, Any]) -> tuple[Field, ...]:
    required = set(schema.get("required", ()))
    return tuple(
        Field(name, type_tokens(field), name in required, _description(field))
        for name, field in schema.get("properties", {}).items()
    )


def _description(schema: Mapping[str, Any]) -> str:
    said = schema.get("description", "")
    if schema.get("readOnly"):
        said = f"{said} (read-only)".strip()
    return said


def _parameters(operation: Mapping[str, Any]) -> tuple[Field, ...]:
    return tuple(
        Field(f"{p['name']} ({p['in']})", type_tokens(p.get("schema", {})), bool(p.get("required")), _description(p))
        for p in operation.get("parameters", ())
    )


def _bodies(status: str, description: str, content: Mapping[str, Any]) -> list[Body]:
    if not content:
        return [Body(status, description, "", (("no body", ""),))]
    return [
        Body(status, description, media_type, type_tokens(media.get("schema", {})))
        for media_type, media in content.items()
    ]


def _operation(path: str, method: str, operation: Mapping[str, Any]) -> Operation:
    request = operation.get("requestBody")
    requests = _bodies("", request.get("description", ""), request.get("content", {})) if request else []
    responses = [
        body
        for status, answer in operation.get("responses", {}).items()
        for body in _bodies(status, answer.get("description", ""), answer.get("content", {}))
    ]
    return Operation(
        method=method.upper(),
        path=path,
        anchor=operation.get("operationId", f"{method}-{path}"),
        summary=operation.get("summary", ""),
        description=unwrapped(operation.get("description", "")),
        deprecated=bool(operation.get("deprecated")),
        parameters=_parameters(operation),
        request=tuple(requests),
        responses=tuple(responses),
    )


def api_reference(schema: Mapping[str, Any]) -> Reference:
    """The page's sections, in the schema's path order, one per tag (the path's first word)."""
    sections: dict[str, list[Operation]] = {}
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["api"])[0]
                sections.setdefault(tag, []).append(_operation(path, method, item[method]))
    shapes = tuple(
        Shape(
            name,
            unwrapped(shape.get("description", "")),
            () if "properties" in shape else type_tokens(shape),
            fields_of(shape),
        )
        for name, shape in sorted(schema.get("components", {}).get("schemas", {}).items())
    )
    info = schema.get("info", {})
    return Reference(
        title=info.get("title", ""),
        version=info.get("version", ""),
        description=unwrapped(info.get("description", "")),
        sections=tuple(Section(tag, tuple(operations)) for tag, operations in sections.items()),
        shapes=shapes,
    )
