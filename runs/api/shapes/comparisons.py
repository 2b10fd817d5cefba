"""The comparison's answers (runs.compare.selectors.comparison:comparison_data, .export's rows)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema_serializer
from rest_framework import serializers

from runs.api.shapes.common import dataclass_serializer, serializer_of
from runs.compare.query import FILTERS, PARAMETERS
from runs.compare.selectors.comparison import IOSTAT_MEANS, PERCENTILES, VMSTAT_MEANS
from runs.compare.stats import Comparison, Summary

SummarySerializer = dataclass_serializer(
    "SummarySerializer", Summary, "A metric over a group's finished runs: n, mean, spread, 95% interval."
)
ComparisonStatsSerializer = dataclass_serializer(
    "ComparisonStatsSerializer", Comparison, "A group against the baseline: ratio, difference, tests, verdict."
)

QUERY_PARAMETERS = [
    OpenApiParameter("runs", str, description="The run ids, comma-separated (runs=1,2,3); or campaign."),
    OpenApiParameter("campaign", int, description="A campaign's runs; or runs."),
    OpenApiParameter("group", str, description="Fields to group by, comma-separated (group=device,filesystem)."),
    OpenApiParameter("baseline", int, description="The index of the baseline group (0, the default: the first)."),
    OpenApiParameter("facet", str, description="A grouping field to split charts by; it must be in group."),
    OpenApiParameter("show", str, description="The run ids whose per-second series are shown, comma-separated."),
    *(
        OpenApiParameter(
            name, str, description=f"The run list's {name} filter, as /api/runs/ reads it: the runs it lists."
        )
        for name in FILTERS
    ),
]
FILE_PARAMETER = OpenApiParameter("file", str, enum=["json", "csv"], description="json (the default) or csv.")


QuerySerializer = serializer_of(
    "QuerySerializer",
    "The query string that gives this comparison back (only what differs from the defaults).",
    {name: serializers.CharField(required=False) for name in (*PARAMETERS, *FILTERS)},
)


class GroupSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    label = serializers.CharField()
    baseline = serializers.BooleanField()
    facet = serializers.CharField(allow_null=True)
    runs = serializers.ListField(child=serializers.IntegerField())
    done = serializers.ListField(child=serializers.IntegerField(), help_text="its finished runs")


class RunValueSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    value = serializers.FloatField(allow_null=True)


class MetricRowSerializer(serializers.Serializer):
    group = serializers.IntegerField()
    summary = SummarySerializer()
    values = RunValueSerializer(many=True)
    comparison = ComparisonStatsSerializer(allow_null=True, help_text="null for the baseline")
    failed = serializers.IntegerField()
    confounded = serializers.CharField(help_text="what the verdict mixes in besides the grouping; empty: nothing")


class MetricSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    unit = serializers.CharField()
    direction = serializers.ChoiceField(choices=["higher_is_faster", "lower_is_faster", "neutral"])
    rows = MetricRowSerializer(many=True)


LatencyPercentilesSerializer = type(
    "LatencyPercentilesSerializer",
    (serializers.Serializer,),
    {"group": serializers.IntegerField()}
    | {name: serializers.FloatField(allow_null=True, help_text="ms, mean over the group") for name in PERCENTILES},
)
IostatMeansSerializer = type(
    "IostatMeansSerializer",
    (serializers.Serializer,),
    {name: serializers.FloatField(allow_null=True) for name in IOSTAT_MEANS},
)
VmstatMeansSerializer = type(
    "VmstatMeansSerializer",
    (serializers.Serializer,),
    {name: serializers.FloatField(allow_null=True) for name in VMSTAT_MEANS},
)


class OsMeansSerializer(serializers.Serializer):
    group = serializers.IntegerField()
    iostat = IostatMeansSerializer()
    vmstat = VmstatMeansSerializer()


class SeriesSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    group = serializers.IntegerField()
    label = serializers.CharField()
    warmup_s = serializers.IntegerField()
    seconds = serializers.ListField(child=serializers.IntegerField())
    tps = serializers.ListField(child=serializers.FloatField(allow_null=True))
    latency_ms = serializers.ListField(child=serializers.FloatField(allow_null=True))


class DifferenceSerializer(serializers.Serializer):
    """Something besides the grouping that differs between the compared runs."""

    label = serializers.CharField()
    kind = serializers.CharField()
    values = serializers.ListField(child=serializers.CharField(), help_text="its value in each group")
    explained = serializers.BooleanField()
    between = serializers.BooleanField()
    varies_within = serializers.ListField(child=serializers.IntegerField(), help_text="groups where it varies")
    confounded = serializers.BooleanField()


@extend_schema_serializer(many=False)  # GET /api/comparisons/ is a "list" route that answers one object
class ComparisonSerializer(serializers.Serializer):
    """The numbers of the comparison page."""

    title = serializers.CharField()
    query = QuerySerializer()
    groups = GroupSerializer(many=True)
    facets = serializers.ListField(child=serializers.CharField())
    metrics = MetricSerializer(many=True)
    latency_percentiles = LatencyPercentilesSerializer(many=True)
    os = OsMeansSerializer(many=True)
    series = SeriesSerializer(many=True)
    differs = DifferenceSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())
    drift = serializers.ListField(child=serializers.CharField(), help_text="the lab changes between the runs")


class SummaryRowSerializer(serializers.Serializer):
    """One row per metric and group, as the page's summary table, unrounded."""

    metric = serializers.CharField()
    unit = serializers.CharField()
    group = serializers.IntegerField()
    configuration = serializers.CharField()
    driver = serializers.CharField()
    baseline = serializers.BooleanField()
    n = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True)
    sd = serializers.FloatField(allow_null=True)
    minimum = serializers.FloatField(allow_null=True)
    median = serializers.FloatField(allow_null=True)
    maximum = serializers.FloatField(allow_null=True)
    cv = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    ratio = serializers.FloatField(allow_null=True)
    ratio_ci_low = serializers.FloatField(allow_null=True)
    ratio_ci_high = serializers.FloatField(allow_null=True)
    difference_pct = serializers.FloatField(allow_null=True)
    welch_p = serializers.FloatField(allow_null=True)
    mann_whitney_p = serializers.FloatField(allow_null=True)
    adjusted_p = serializers.FloatField(allow_null=True)
    verdict = serializers.CharField(allow_null=True)
    confounded = serializers.CharField()
    failed = serializers.IntegerField()
    runs = serializers.ListField(child=serializers.IntegerField())
    memory_tier = serializers.CharField()
    durable = serializers.CharField(help_text='"yes", "no", "some", or "" when unknown')
    origin = serializers.CharField(help_text='"measured", "imported", or both: "imported / measured"')


class SummaryTableSerializer(serializers.Serializer):
    query = QuerySerializer()
    rows = SummaryRowSerializer(many=True)


class SeriesRowSerializer(serializers.Serializer):
    """One per-second sample of one compared run (sysbench's also carry qps and latency_p95_ms)."""

    run = serializers.IntegerField()
    group = serializers.IntegerField()
    configuration = serializers.CharField()
    driver = serializers.CharField()
    second = serializers.IntegerField()
    tps = serializers.FloatField(allow_null=True)
    latency_ms = serializers.FloatField(allow_null=True)
    warmup = serializers.BooleanField()
    qps = serializers.FloatField(allow_null=True, required=False)
    latency_p95_ms = serializers.FloatField(allow_null=True, required=False)


class SeriesTableSerializer(serializers.Serializer):
    query = QuerySerializer()
    rows = SeriesRowSerializer(many=True)
