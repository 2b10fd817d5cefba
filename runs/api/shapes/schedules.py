"""The schedule API's answers (runs.api.schedules: schedule_json, firing_json)."""

from rest_framework import serializers

from runs.models import RoundOutcome
from runs.schedules.crontab import FIELD_NAMES

CrontabSerializer = type(
    "CrontabSerializer",
    (serializers.Serializer,),
    {"__doc__": "The five crontab fields, in the site's time zone."}
    | {name: serializers.CharField() for name in FIELD_NAMES},
)


class FiringSerializer(serializers.Serializer):
    """A round: when the schedule fired, and what came of it."""

    at = serializers.DateTimeField()
    outcome = serializers.ChoiceField(choices=RoundOutcome.choices)
    round = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()
    campaign = serializers.IntegerField(allow_null=True, help_text="the campaign the round queued")
    fired_by = serializers.CharField(allow_null=True, help_text="who clicked run-now; null: beat")


class ScheduleSerializer(serializers.Serializer):
    """A schedule as the list shows it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    campaign = serializers.IntegerField()
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    enabled = serializers.BooleanField(help_text="false: paused")
    crontab = CrontabSerializer()
    timezone = serializers.CharField()
    times = serializers.CharField(help_text="the times in words")
    next_round_at = serializers.DateTimeField(allow_null=True)
    last_outcome = serializers.ChoiceField(choices=RoundOutcome.choices, allow_null=True)
    last_message = serializers.CharField()
    last_fired_at = serializers.DateTimeField(allow_null=True)


class ScheduleDetailSerializer(ScheduleSerializer):
    rounds = FiringSerializer(many=True, help_text="its latest rounds, newest first")


class ScheduleFiredSerializer(ScheduleDetailSerializer):
    fired = FiringSerializer(allow_null=True, help_text="the round this asked for")
