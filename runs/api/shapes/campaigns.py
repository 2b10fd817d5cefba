"""The campaign API's answers (runs.api.campaigns: campaign_json, cell_json, the preview)."""

from rest_framework import serializers

from runs.api.shapes.comparisons import ComparisonStatsSerializer, SummarySerializer
from runs.models import RunOrder

SPEC_HELP = "a run's specification, as POST /api/runs/ takes one (its fields by name)"


class ProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="runs planned")
    finished = serializers.IntegerField(help_text="runs ended, however they ended")
    by_state = serializers.DictField(child=serializers.IntegerField(), help_text="a run state: how many")
    eta_s = serializers.FloatField(allow_null=True, help_text="seconds left, estimated; null: nothing to base it on")


class CampaignSerializer(serializers.Serializer):
    """A campaign as the list shows it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    note = serializers.CharField(help_text="why it was made, what to know about it (POST …/notes/ sets it)")
    tags = serializers.ListField(child=serializers.CharField(), help_text="short lowercase words, such as fw-2.1")
    preset = serializers.CharField(help_text="the preset study it was made from; empty: none")
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    repetitions = serializers.IntegerField()
    order = serializers.ChoiceField(choices=RunOrder.choices)
    seed = serializers.IntegerField(allow_null=True)
    fresh_database = serializers.BooleanField()
    fio_baseline = serializers.BooleanField()
    fio_canary = serializers.BooleanField()
    target_ci_pct = serializers.FloatField(allow_null=True)
    max_repetitions = serializers.IntegerField(allow_null=True)
    progress = ProgressSerializer()


class AdaptiveSerializer(serializers.Serializer):
    repeating = serializers.BooleanField(help_text="still repeating: its interval is not yet as narrow as asked")
    reason = serializers.CharField()


class ConfigurationRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    repetition = serializers.IntegerField()
    state = serializers.CharField()


class ConfigurationSerializer(serializers.Serializer):
    adaptive = AdaptiveSerializer(allow_null=True, help_text="null: the campaign is not adaptive")
    index = serializers.IntegerField()
    label = serializers.CharField()
    values = serializers.DictField(help_text="each variable's value in this configuration")
    spec = serializers.DictField(help_text=SPEC_HELP)
    runs = ConfigurationRunSerializer(many=True, help_text="every attempt of every repetition")


class StatisticsRowSerializer(serializers.Serializer):
    configuration = serializers.IntegerField()
    summary = SummarySerializer()
    comparison = ComparisonStatsSerializer(allow_null=True, help_text="null for the baseline")
    confounded = serializers.CharField(allow_null=True, help_text="what the verdict mixes in; null: nothing")
    failed = serializers.IntegerField()
    failures = serializers.ListField(child=serializers.CharField(), help_text='"run 12: why", for each failed run')


class StatisticsTableSerializer(serializers.Serializer):
    label = serializers.CharField()
    unit = serializers.CharField()
    rows = StatisticsRowSerializer(many=True)


class CanaryEndSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="the fio baseline")
    state = serializers.CharField()
    finished_at = serializers.DateTimeField(allow_null=True)


class CanaryFigureSerializer(serializers.Serializer):
    job = serializers.CharField()
    direction = serializers.CharField()
    figure = serializers.CharField()
    unit = serializers.CharField()
    before = serializers.FloatField(allow_null=True)
    after = serializers.FloatField(allow_null=True)
    change_pct = serializers.FloatField(allow_null=True)
    changed = serializers.BooleanField()


class CanaryDeviceSerializer(serializers.Serializer):
    device = serializers.CharField()
    device_id = serializers.IntegerField()
    status = serializers.CharField()
    why = serializers.CharField()
    margin_factor = serializers.FloatField(help_text="after / before beyond it, either way, is a change")
    before = CanaryEndSerializer(allow_null=True)
    after = CanaryEndSerializer(allow_null=True)
    figures = CanaryFigureSerializer(many=True)


class CanarySerializer(serializers.Serializer):
    status = serializers.CharField()
    reason = serializers.CharField()
    devices = CanaryDeviceSerializer(many=True)


class CampaignDetailSerializer(CampaignSerializer):
    """A campaign with its matrix and the statistics its page shows."""

    base_spec = serializers.DictField(help_text=SPEC_HELP)
    variables = serializers.ListField(child=serializers.DictField(), help_text='[{"field": …, "values": […]}, …]')
    rejected = serializers.ListField(
        child=serializers.DictField(), help_text='the combinations refused: [{"label": …, "errors": {field: […]}}]'
    )
    baseline = serializers.IntegerField(help_text="the configuration the others are compared with")
    configurations = ConfigurationSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())
    statistics = serializers.DictField(child=StatisticsTableSerializer(), help_text="by metric key")
    canary = CanarySerializer(allow_null=True, help_text="null: no fio canary asked")


class CellSerializer(serializers.Serializer):
    label = serializers.CharField()
    values = serializers.DictField()
    valid = serializers.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField(), help_text="why it cannot run")
    spec = serializers.DictField(help_text=SPEC_HELP)


class CampaignPreviewSerializer(serializers.Serializer):
    """With "preview": true, what would be queued; nothing is."""

    configurations = CellSerializer(many=True)
    runs = serializers.IntegerField()
    estimated_wall_s = serializers.FloatField(allow_null=True)
    refusal = serializers.CharField(allow_null=True, help_text="why it could not be queued; null: it could")


class CampaignCancelSerializer(serializers.Serializer):
    configuration = serializers.IntegerField(
        required=False, help_text="one configuration's index: cancel only its runs; left out: the whole campaign"
    )


class CampaignCancelledSerializer(CampaignSerializer):
    cancelled = serializers.IntegerField(help_text="jobs cancelled or asked to stop")


class CampaignRetrySerializer(serializers.Serializer):
    new_seeds = serializers.BooleanField(required=False, default=False, help_text="the retried runs get new seeds")


class CampaignRetriedSerializer(CampaignSerializer):
    queued = serializers.IntegerField(help_text="runs queued again")
