"""JSON columns as the API's schema should type them: DRF's JSONField, unchanged in what it reads
and writes, with the shape the column holds (drf-spectacular would say "any value")."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(serializers.JSONField):
    """A column holding a JSON object (default dict)."""


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class JSONTextListField(serializers.JSONField):
    """A column holding a list of strings (fio job names, configure flags)."""


@extend_schema_field({"type": "array", "items": {"type": "array", "items": {"type": "string"}}})
class JSONStepsField(serializers.JSONField):
    """A build's steps: [name, started, ended] ISO times, [name, started] for the step in progress."""
