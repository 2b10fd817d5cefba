"""The schedule API: list, create (a campaign, a name, a preset or the five crontab fields), retrieve
with its rounds, patch (name, times, enabled: pause and resume), delete, and run-now. The same
checks as the pages (runs.schedules.crontab), the same owners (an operator's own campaigns, admins
any); bad input is a 400 naming the field, and nothing is written."""

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.filtering import CheckedListParameters
from runs.api.jobs import QueueThrottled
from runs.api.permissions import RolePermission
from runs.api.shapes.common import BAD_INPUT, REFUSED
from runs.api.shapes.schedules import ScheduleDetailSerializer, ScheduleFiredSerializer, ScheduleSerializer
from runs.campaigns.services.campaigns import campaign_owner_refusal
from runs.common.params import IdConverter
from runs.models import Campaign, CampaignSchedule, ScheduleRound
from runs.schedules.crontab import CRON_PRESETS, FIELD_NAMES, Crontab, crontab_errors, crontab_of
from runs.schedules.names import NAME_MAX, validate_schedule_name
from runs.schedules.selectors import ScheduleView, schedule_firings, schedule_view
from runs.schedules.services.rounds import schedule_fire
from runs.schedules.services.schedules import ScheduleForbidden, schedule_change, schedule_create, schedule_delete

CRON_HELP = "crontab syntax, in the site's time zone; with `preset`, leave it out"


class ScheduleInputSerializer(serializers.Serializer):
    campaign = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="The campaign to repeat.")
    name = serializers.CharField(max_length=NAME_MAX, validators=[validate_schedule_name])
    preset = serializers.ChoiceField(choices=list(CRON_PRESETS), required=False, help_text="Instead of the fields.")
    minute = serializers.CharField(required=False, help_text=CRON_HELP)
    hour = serializers.CharField(required=False, help_text=CRON_HELP)
    day_of_month = serializers.CharField(required=False, help_text=CRON_HELP)
    month_of_year = serializers.CharField(required=False, help_text=CRON_HELP)
    day_of_week = serializers.CharField(required=False, help_text=CRON_HELP)
    enabled = serializers.BooleanField(required=False, help_text="false: paused")

    def __init__(self, *args: Any, current: Crontab | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current = current or Crontab()  # a patch changes the fields it names

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in FIELD_NAMES if name in attrs]
        if "preset" in attrs:
            if given:
                raise ValidationError({"preset": f"give a preset or the crontab fields ({', '.join(given)}), not both"})
            attrs["crontab"] = CRON_PRESETS[attrs["preset"]].crontab
        elif given:
            values = self.current.as_dict() | {name: attrs[name] for name in given}
            if errors := crontab_errors(values):
                raise ValidationError(errors)
            attrs["crontab"] = crontab_of(values)
        return attrs


def firing_json(firing: ScheduleRound) -> dict[str, Any]:
    return {
        "at": firing.at.isoformat(),
        "outcome": firing.outcome,
        "round": firing.number,
        "message": firing.message,
        "campaign": firing.campaign_id,
        "fired_by": firing.fired_by.get_username() if firing.fired_by else None,
    }


def schedule_json(view: ScheduleView, firings: list[ScheduleRound] | None = None) -> dict[str, Any]:
    schedule = view.schedule
    data = {
        "id": schedule.pk,
        "name": schedule.name,
        "campaign": schedule.campaign_id,
        "created_by": schedule.created_by.get_username() if schedule.created_by else None,
        "created_at": schedule.created_at.isoformat(),
        "enabled": schedule.enabled,
        "crontab": view.crontab.as_dict(),
        "timezone": settings.TIME_ZONE,
        "times": view.times,
        "next_round_at": view.next_at.isoformat() if view.next_at else None,
        "last_outcome": schedule.last_outcome or None,
        "last_message": schedule.last_message,
        "last_fired_at": schedule.last_fired_at.isoformat() if schedule.last_fired_at else None,
    }
    if firings is not None:
        data["rounds"] = [firing_json(firing) for firing in firings]
    return data


@extend_schema_view(
    list=extend_schema(responses=ScheduleSerializer(many=True)),
    retrieve=extend_schema(responses=ScheduleDetailSerializer),
    create=extend_schema(
        responses={201: ScheduleDetailSerializer, 400: BAD_INPUT, 403: REFUSED},
    ),
    update=extend_schema(
        request=ScheduleInputSerializer,
        responses={400: OpenApiResponse(BAD_INPUT.response, description="Always: change a schedule with PATCH.")},
        deprecated=True,
        description="Refused: a schedule is changed with PATCH (name, enabled, preset or crontab fields).",
    ),
    partial_update=extend_schema(responses={200: ScheduleDetailSerializer, 400: BAD_INPUT, 403: REFUSED}),
    destroy=extend_schema(responses={204: None, 403: REFUSED}),
    run_now=extend_schema(request=None, responses={200: ScheduleFiredSerializer, 403: REFUSED}),
)
class ScheduleViewSet(CheckedListParameters, QueueThrottled, viewsets.GenericViewSet):
    lookup_value_regex = IdConverter.regex
    queryset = CampaignSchedule.objects.select_related("campaign", "created_by", "periodic_task__crontab")
    serializer_class = ScheduleInputSerializer
    permission_classes = [RolePermission]
    required_permission = {
        "create": "runs.queue_run",
        "partial_update": "runs.queue_run",
        "update": "runs.queue_run",
        "destroy": "runs.queue_run",
        "run_now": "runs.queue_run",
    }
    queue_actions = ("create", "run_now")

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        rows = page if page is not None else self.get_queryset()
        items = [schedule_json(schedule_view(schedule)) for schedule in rows]
        return self.get_paginated_response(items) if page is not None else Response(items)

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        schedule = self.get_object()
        return Response(schedule_json(schedule_view(schedule), schedule_firings(schedule)))

    def create(self, request: Request) -> Response:
        serializer = ScheduleInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        campaign = Campaign.objects.select_related("created_by").filter(pk=data["campaign"]).first()
        if campaign is None:
            raise ValidationError({"campaign": f"no campaign {data['campaign']}"})
        if refusal := campaign_owner_refusal(request.user, campaign, "schedule"):
            raise PermissionDenied(refusal)
        schedule = schedule_create(
            campaign=campaign, name=data["name"], crontab=data.get("crontab", Crontab()), by=request.user,
            request=request,
        )  # fmt: skip
        if data.get("enabled") is False:
            schedule_change(schedule=schedule, by=request.user, request=request, enabled=False)
        return Response(self._fresh(schedule.pk), status=status.HTTP_201_CREATED)

    def update(self, request: Request, pk: str | None = None) -> Response:
        raise ValidationError("Change a schedule with PATCH (name, enabled, preset or crontab fields).")

    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        schedule = self.get_object()
        current = schedule_view(schedule).crontab
        serializer = ScheduleInputSerializer(data=request.data, partial=True, current=current)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if "campaign" in data:
            raise ValidationError({"campaign": "a schedule's campaign is not changed: make another schedule"})
        try:
            schedule_change(
                schedule=schedule, by=request.user, request=request, name=data.get("name"),
                crontab=data.get("crontab"), enabled=data.get("enabled"),
            )  # fmt: skip
        except ScheduleForbidden as exc:
            raise PermissionDenied(str(exc)) from None
        return Response(self._fresh(schedule.pk))

    def destroy(self, request: Request, pk: str | None = None) -> Response:
        try:
            schedule_delete(schedule=self.get_object(), by=request.user, request=request)
        except ScheduleForbidden as exc:
            raise PermissionDenied(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    @action(detail=True, methods=["post"], url_path="run-now")
    def run_now(self, request: Request, pk: str | None = None) -> Response:
        """Fire it now, as beat would (also when paused): a round queued, skipped or refused, and why."""
        schedule = self.get_object()
        try:
            firing = schedule_fire(schedule_id=schedule.pk, by=request.user, request=request)
        except ScheduleForbidden as exc:
            raise PermissionDenied(str(exc)) from None
        data = self._fresh(schedule.pk)
        data["fired"] = firing_json(firing) if firing is not None else None
        return Response(data)

    def _fresh(self, pk: int) -> dict[str, Any]:
        schedule = self.get_queryset().get(pk=pk)
        return schedule_json(schedule_view(schedule), schedule_firings(schedule))
