"""The watch API's answers (runs.api.change_points: change_point_json, subscriber_json)."""

from rest_framework import serializers

from runs.models import ChangePointState


class RoundCampaignSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    schedule_round = serializers.IntegerField(allow_null=True)


class FirstRoundAfterSerializer(serializers.Serializer):
    """The first round after the change: its campaign, or its run (one of the two; empty: gone)."""

    campaign = RoundCampaignSerializer(required=False)
    run = serializers.IntegerField(required=False)


class ChangePointSerializer(serializers.Serializer):
    """A stored change point: what a subscriber is told of it, its identity and its triage."""

    id = serializers.IntegerField()
    identity = serializers.CharField(help_text="stable across detections: series, metric and round")
    first_round_after = FirstRoundAfterSerializer()
    series = serializers.CharField(help_text="the series' key")
    series_title = serializers.CharField()
    metric = serializers.CharField()
    change = serializers.FloatField(help_text="after / before - 1")
    change_low = serializers.FloatField(allow_null=True, help_text="null: Fieller's interval is unbounded")
    change_high = serializers.FloatField(allow_null=True)
    p = serializers.FloatField()
    mean_before = serializers.FloatField()
    mean_after = serializers.FloatField()
    round_before = serializers.IntegerField()
    round_after = serializers.IntegerField()
    series_path = serializers.CharField()
    comparison_path = serializers.CharField()
    series_url = serializers.CharField(allow_null=True, help_text="on BENCHLAB_SITE_URL; null when it is not set")
    comparison_url = serializers.CharField(allow_null=True)
    drift = serializers.ListField(child=serializers.CharField(), help_text="what changed on the hosts near it")
    detected_at = serializers.DateTimeField()
    gone_at = serializers.DateTimeField(allow_null=True, help_text="no longer found since; null: still found")
    state = serializers.ChoiceField(choices=ChangePointState.choices)
    note = serializers.CharField()
    triaged_by = serializers.CharField(allow_null=True)
    triaged_at = serializers.DateTimeField(allow_null=True)


class SubscriberSerializer(serializers.Serializer):
    """A schedule's subscriber; its webhook URL masked unless you may change the schedule."""

    id = serializers.IntegerField()
    schedule = serializers.IntegerField()
    email = serializers.CharField()
    webhook_url = serializers.CharField()
    webhook_url_masked = serializers.BooleanField()


class SubscriberAddedSerializer(SubscriberSerializer):
    webhook_secret = serializers.CharField(
        required=False, help_text="a webhook's signing secret, in this answer only: keep it, it is shown no more"
    )
