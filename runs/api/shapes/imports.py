"""POST /api/runs/import/: its multipart body (the import form's fields, runs.forms.imports) and answers."""

from django import forms
from rest_framework import serializers

from runs.api.shapes.common import serializer_of
from runs.forms.imports import RunImportForm


def _field(field: forms.Field) -> serializers.Field:
    """The form field as the schema shows it: files as binary, lists of files as lists, the rest as text."""
    help_text = str(field.help_text or field.label or "")
    if isinstance(field, forms.FileField) and getattr(field.widget, "allow_multiple_selected", False):
        return serializers.ListField(child=serializers.FileField(), required=False, help_text=help_text)
    if isinstance(field, forms.FileField):
        return serializers.FileField(required=field.required, help_text=help_text)
    if isinstance(field, forms.IntegerField | forms.ModelChoiceField):
        return serializers.IntegerField(required=field.required, help_text=help_text)
    if isinstance(field, forms.FloatField):
        return serializers.FloatField(required=field.required, help_text=help_text)
    return serializers.CharField(required=field.required, help_text=help_text)


RunImportRequestSerializer = serializer_of(
    "RunImportRequestSerializer",
    "pgbench's output (at least a summary or progress lines) and the setup it ran on.",
    {name: _field(field) for name, field in RunImportForm.base_fields.items()},
)


class RunImportedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    origin = serializers.CharField(help_text='"imported"')
    url = serializers.CharField(help_text="The run's API detail.")


class RunImportRefusedSerializer(serializers.Serializer):
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.DictField()),
        help_text="Per field, its errors as {message, code}; a bad file's message names its line.",
    )
