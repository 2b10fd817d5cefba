"""POST /api/runs/<id>/notes/ and /api/campaigns/<id>/notes/: a run's or a campaign's note and
tags, set whole (runs.notes): its owner's or an admin's, audited."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.shapes.common import BAD_INPUT, REFUSED
from runs.models.notes import NOTE_MAX, TAG_MAX, TAGS_MAX
from runs.notes.rules import NotesRefused
from runs.notes.services.notes import notes_set


class NotesSerializer(serializers.Serializer):
    """Either or both; one left out keeps what it is. Any other key is refused."""

    note = serializers.CharField(
        max_length=NOTE_MAX, allow_blank=True, required=False, trim_whitespace=False, help_text="Replaces the note."
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=TAG_MAX),
        max_length=TAGS_MAX,
        required=False,
        help_text="The tags, replacing those it has: short lowercase words such as firmware-2.1.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                f"Unknown field {', '.join(map(repr, unknown))}: give note, tags or both."
            )
        if not attrs:
            raise serializers.ValidationError("Give note, tags or both.")
        return attrs


class NotesAnswerSerializer(NotesSerializer):
    """The run's or campaign's notes as stored."""

    id = serializers.IntegerField()


class NotesAction:
    """The notes action of a viewset whose objects are runs or campaigns."""

    notes_permission = {"notes": "runs.queue_run"}  # and the owner's or an admin's: runs.notes.services

    @extend_schema(request=NotesSerializer, responses={200: NotesAnswerSerializer, 400: BAD_INPUT, 403: REFUSED})
    @action(detail=True, methods=["post"], serializer_class=NotesSerializer)
    def notes(self, request: Request, pk: str | None = None) -> Response:
        target = self.get_object()  # type: ignore[attr-defined]
        given = NotesSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        asked = {"note": target.note, "tags": list(target.tags)} | given.validated_data  # what is left out stays
        try:
            notes = notes_set(target=target, actor=request.user, request=request, **asked)
        except NotesRefused as exc:
            if exc.field == "permission":
                raise PermissionDenied(str(exc)) from None
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response(notes_json(target) | {"note": notes.note, "tags": list(notes.tags)})


def notes_json(target: Any) -> dict[str, Any]:
    return {"id": target.pk, "note": target.note, "tags": list(target.tags)}
