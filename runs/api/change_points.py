"""The watch's API: stored change points (list, paginated as the other lists; filter by state, and by
whether the latest detection still found them: found=yes (the default), no or all; PATCH state and
note: the regressions page's triage) and a schedule's subscribers (list, add: a webhook's secret is
in the answer this once, remove). Bad input is a 400 naming the field, and nothing is written."""

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.filtering import CheckedListParameters
from runs.api.permissions import RolePermission
from runs.api.shapes.common import BAD_INPUT, REFUSED
from runs.api.shapes.watch import ChangePointSerializer, SubscriberAddedSerializer
from runs.api.shapes.watch import SubscriberSerializer as SubscriberAnswerSerializer
from runs.common.params import BadParameter, IdConverter, parse_choice, parse_id
from runs.models import NOTE_MAX, CampaignSchedule, ChangePointState, ScheduleSubscriber, StoredChangePoint
from runs.notify.services.subscribers import SubscriberRefused, subscriber_add, subscriber_remove
from runs.schedules.services.schedules import schedule_refusal
from runs.watch.regressions.selectors import FILTERS, FOUND_FILTERS, change_points
from runs.watch.services.detect import change_point_payload
from runs.watch.services.triage import TRIAGE_PERMISSION, TriageRefused, change_point_triage


def change_point_json(point: StoredChangePoint) -> dict[str, Any]:
    """What a subscriber is told of it (runs.watch.services.detect), its row's id and its triage."""
    return change_point_payload(point) | {
        "id": point.pk,
        "identity": point.identity,
        "detected_at": point.detected_at.isoformat(),
        "gone_at": point.gone_at.isoformat() if point.gone_at else None,  # no longer found since
        "state": point.state,
        "note": point.note,
        "triaged_by": point.triaged_by.get_username() if point.triaged_by else None,
        "triaged_at": point.triaged_at.isoformat() if point.triaged_at else None,
    }


class TriageSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=ChangePointState.values)
    note = serializers.CharField(max_length=NOTE_MAX, required=False, allow_blank=True, default="")


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=list(FILTERS), description="Triage state (default: all)."),
            OpenApiParameter(
                "found",
                str,
                enum=list(FOUND_FILTERS),
                description="Found by the latest detection: yes (the default), no (gone) or all.",
            ),
        ],
        responses=ChangePointSerializer(many=True),
    ),
    retrieve=extend_schema(responses=ChangePointSerializer),
    update=extend_schema(
        responses={400: OpenApiResponse(BAD_INPUT.response, description="Always: triage with PATCH.")},
        deprecated=True,
        description="Refused: a change point is triaged with PATCH (state, note).",
    ),
    partial_update=extend_schema(responses={200: ChangePointSerializer, 400: BAD_INPUT, 403: REFUSED}),
)
class ChangePointViewSet(CheckedListParameters, viewsets.GenericViewSet):
    lookup_value_regex = IdConverter.regex
    queryset = StoredChangePoint.objects.select_related("triaged_by")
    serializer_class = TriageSerializer
    permission_classes = [RolePermission]
    required_permission = {"partial_update": TRIAGE_PERMISSION, "update": TRIAGE_PERMISSION}
    list_parameters = ("state", "found")

    def list(self, request: Request) -> Response:
        chosen = {}
        for name, default, choices in (("state", "all", FILTERS), ("found", "yes", FOUND_FILTERS)):
            try:
                chosen[name] = parse_choice(request.query_params.get(name, default) or default, name, choices)
            except BadParameter as exc:
                raise ValidationError({name: str(exc)}) from None
        rows = change_points(chosen["state"], chosen["found"])
        page = self.paginate_queryset(rows)
        items = [change_point_json(point) for point in (page if page is not None else rows)]
        return self.get_paginated_response(items) if page is not None else Response(items)

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(change_point_json(self.get_object()))

    def update(self, request: Request, pk: str | None = None) -> Response:
        raise ValidationError("Triage a change point with PATCH (state, note).")

    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        point = self.get_object()
        serializer = TriageSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            point = change_point_triage(point=point, actor=request.user, request=request, **serializer.validated_data)
        except TriageRefused as exc:
            raise ValidationError({exc.field: str(exc)}) from None
        return Response(change_point_json(point))


def subscriber_json(subscriber: ScheduleSubscriber, user: Any, secret: str = "") -> dict[str, Any]:
    """The subscriber, its webhook URL masked for `user` unless they may change its schedule."""
    full = schedule_refusal(user, subscriber.schedule, "change") is None
    data: dict[str, Any] = {
        "id": subscriber.pk,
        "schedule": subscriber.schedule_id,
        "email": subscriber.email,
        "webhook_url": subscriber.webhook_url if full else subscriber.webhook_masked,
        "webhook_url_masked": not full and bool(subscriber.webhook_url),
    }
    if secret:
        data["webhook_secret"] = secret  # this once: keep it, benchlab shows it no more
    return data


class SubscriberSerializer(serializers.Serializer):
    schedule = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    email = serializers.CharField(max_length=254, required=False, allow_blank=True, default="")
    webhook_url = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("schedule", int, description="Only this schedule's subscribers.")],
        responses=SubscriberAnswerSerializer(many=True),
    ),
    retrieve=extend_schema(responses=SubscriberAnswerSerializer),
    create=extend_schema(responses={201: SubscriberAddedSerializer, 400: BAD_INPUT, 403: REFUSED}),
    destroy=extend_schema(responses={204: None, 403: REFUSED}),
)
class SubscriberViewSet(CheckedListParameters, viewsets.GenericViewSet):
    lookup_value_regex = IdConverter.regex
    queryset = ScheduleSubscriber.objects.select_related("schedule__campaign__created_by", "schedule__created_by")
    serializer_class = SubscriberSerializer
    permission_classes = [RolePermission]
    required_permission = {"create": "runs.queue_run", "destroy": "runs.queue_run"}
    list_parameters = ("schedule",)

    def list(self, request: Request) -> Response:
        rows = self.get_queryset().order_by("pk")
        if raw := request.query_params.get("schedule"):
            try:
                rows = rows.filter(schedule_id=parse_id(raw, "schedule"))
            except BadParameter as exc:
                raise ValidationError({"schedule": str(exc)}) from None
        page = self.paginate_queryset(rows)
        items = [subscriber_json(s, request.user) for s in (page if page is not None else rows)]
        return self.get_paginated_response(items) if page is not None else Response(items)

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(subscriber_json(self.get_object(), request.user))

    def create(self, request: Request) -> Response:
        serializer = SubscriberSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        schedule = CampaignSchedule.objects.select_related("campaign__created_by", "created_by").filter(
            pk=data["schedule"]
        )
        found = schedule.first()
        if found is None:
            raise ValidationError({"schedule": f"no schedule {data['schedule']}"})
        if refusal := schedule_refusal(request.user, found, "subscribe to"):
            raise PermissionDenied(refusal)
        try:
            made = subscriber_add(
                schedule=found, email=data["email"], webhook_url=data["webhook_url"], actor=request.user,
                request=request,
            )  # fmt: skip
        except SubscriberRefused as exc:
            raise ValidationError(exc.errors) from None
        return Response(subscriber_json(made.subscriber, request.user, made.secret), status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, pk: str | None = None) -> Response:
        subscriber = self.get_object()
        if refusal := schedule_refusal(request.user, subscriber.schedule, "unsubscribe from"):
            raise PermissionDenied(refusal)
        subscriber_remove(subscriber=subscriber, actor=request.user, request=request)
        return Response(status=status.HTTP_204_NO_CONTENT)
