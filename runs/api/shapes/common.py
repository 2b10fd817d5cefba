"""Shapes more than one part of the API answers with."""

import dataclasses
import types
import typing
from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class DetailSerializer(serializers.Serializer):
    """A refusal (401, 403, 404, 503, some 400s): what is wrong, in words."""

    detail = serializers.CharField()


# A 400 on bad input: a key per field that is wrong (`non_field_errors` or `detail`: the whole),
# each with its message or messages.
FIELD_ERRORS = {
    "type": "object",
    "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "array", "items": {}}, {"type": "object"}]},
}
BAD_INPUT = OpenApiResponse(FIELD_ERRORS, description="Bad input, naming each field; nothing is written.")
REFUSED = OpenApiResponse(DetailSerializer, description="Not allowed to you, with the reason.")

_FIELDS: dict[type, type[serializers.Field]] = {
    int: serializers.IntegerField,
    float: serializers.FloatField,
    str: serializers.CharField,
    bool: serializers.BooleanField,
}


def dataclass_serializer(name: str, cls: type, doc: str) -> type[serializers.Serializer]:
    """A serializer describing `cls`'s dataclasses.asdict(): read from its fields' types, so the
    schema follows the dataclass (int, float, str, bool, each optionally None)."""
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        hint = typing.get_type_hints(cls)[field.name]
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        nullable = isinstance(hint, types.UnionType) and len(args) < len(typing.get_args(hint))
        base = args[0] if nullable else hint
        if typing.get_origin(base) is typing.Literal:
            fields[field.name] = serializers.ChoiceField(choices=list(typing.get_args(base)), allow_null=nullable)
        else:
            fields[field.name] = _FIELDS[base](allow_null=nullable)
    return serializer_of(name, doc, fields)


def serializer_of(name: str, doc: str, fields: dict[str, Any]) -> type[serializers.Serializer]:
    """A serializer class made of these fields, for a shape whose fields are listed elsewhere."""
    return type(name, (serializers.Serializer,), {"__doc__": doc, **fields})
